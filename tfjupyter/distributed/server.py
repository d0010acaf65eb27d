"""tf.train.Server: one task of a cluster, served over gRPC by any Python process."""
from __future__ import annotations

import atexit
import logging
import secrets
import weakref
import threading
from typing import Optional

import grpc

from ..framework import errors
from ..runtime.devices import local_devices
from ..runtime.elastic_pool import ElasticThreadPool
from . import protocol_pb2 as pb
from .auth import TlsConfig, TokenInterceptor, channel_options, resolve_token, withdraw_token
from .cluster import ClusterSpec, is_loopback
from .telemetry import service_handler as _telemetry_handler
from .worker import Worker

__all__ = ["Server", "ServerDef"]

_log = logging.getLogger("tfjupyter.distributed")

# Each running step holds a thread (it may block on a queue or a receive for as long as it
# likes), so calls get threads on demand; this bounds how many may run at once.
_MAX_CONCURRENT_RPCS = 4096


class ServerDef:
    """What a Server was built from (TensorFlow's ServerDef, as plain fields)."""

    def __init__(self, cluster: ClusterSpec, job_name: str, task_index: int, protocol: str,
                 default_session_config=None):
        self.cluster = cluster
        self.job_name = job_name
        self.task_index = task_index
        self.protocol = protocol
        self.default_session_config = default_session_config

    def __repr__(self) -> str:
        return (f"ServerDef(cluster={self.cluster!r}, job_name={self.job_name!r}, "
                f"task_index={self.task_index}, protocol={self.protocol!r})")


def _service_handlers(worker: Worker) -> grpc.GenericRpcHandler:
    # Every method through wire.rpc_method_handler: requests are decoded by the handler, and
    # a malformed call fails with INVALID_ARGUMENT (RESOURCE_EXHAUSTED for a tensor above the
    # cap) naming the method and this task, instead of grpc's INTERNAL or UNKNOWN.
    from .wire import rpc_method_handler

    def handler(method, behavior, request_type=None, request_streaming=False,
                response_streaming=False):
        return rpc_method_handler(method, lambda: worker.task_name, behavior, request_type,
                                  request_streaming, response_streaming)
    return grpc.method_handlers_generic_handler("tfjupyter.Worker", {
        "GetStatus": handler("GetStatus", worker.get_status, pb.GetStatusRequest),
        "RegisterGraph": handler("RegisterGraph", worker.register_graph, pb.RegisterGraphRequest),
        "RegisterGraphStream": handler("RegisterGraphStream", worker.register_graph_stream,
                                       request_streaming=True),
        "DeregisterGraph": handler("DeregisterGraph", worker.deregister_graph,
                                   pb.DeregisterGraphRequest),
        "CleanupStep": handler("CleanupStep", worker.cleanup_step, pb.CleanupStepRequest),
        # Packed or streamed frames: the worker decodes them (and their tensors) itself.
        "RunGraph": handler("RunGraph", worker.run_graph, request_streaming=True,
                            response_streaming=True),
        "RunGraphUnary": handler("RunGraphUnary", worker.run_graph_unary),
        "PushTensors": handler("PushTensors", worker.push_tensors),
        "FetchParked": handler("FetchParked", worker.fetch_parked, pb.FetchParkedRequest,
                               response_streaming=True),
        "RecvTensor": handler("RecvTensor", worker.recv_tensor, pb.RecvTensorRequest,
                              response_streaming=True),
    })


class Server:
    """``tf.train.Server(cluster, job_name="ps", task_index=0)`` — serves one task.

    The server binds the address the cluster gives its task (``localhost:2222`` binds the
    loopback interface only), and answers only calls that carry the cluster's token.
    """

    def __init__(self, server_or_cluster_def, job_name: Optional[str] = None,
                 task_index: Optional[int] = None, protocol: Optional[str] = None,
                 config=None, start: bool = True, token: Optional[str] = None,
                 tls: Optional[TlsConfig] = None):
        if isinstance(server_or_cluster_def, ServerDef):
            sd = server_or_cluster_def
            cluster, job_name = sd.cluster, job_name or sd.job_name
            task_index = sd.task_index if task_index is None else task_index
            protocol, config = protocol or sd.protocol, config or sd.default_session_config
        else:
            cluster = ClusterSpec(server_or_cluster_def)
        protocol = protocol or "grpc"
        if protocol not in ("grpc", "grpc+tls"):
            raise ValueError(f"Server: unsupported protocol {protocol!r}; use 'grpc'")
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError(f"Server: job_name must be given for a cluster with jobs "
                                 f"{cluster.jobs}")
            job_name = cluster.jobs[0]
        if task_index is None:
            indices = cluster.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError(f"Server: task_index must be given; job {job_name!r} has tasks "
                                 f"{indices}")
            task_index = indices[0]
        address = cluster.task_address(job_name, task_index)
        self._tls = tls or TlsConfig()
        self._config = config
        self._lock = threading.Lock()
        self._started = self._stopped = False
        self._stop_event = threading.Event()

        addresses = [a for _, _, a in cluster.tasks()]
        explicit = token or getattr(config, "cluster_token", None)
        if any(a.endswith(":0") for a in addresses) and not explicit:
            # A port the OS picks cannot name a token file: the token stays in this process.
            explicit = secrets.token_hex(32)
        self._token, self._token_published = resolve_token(addresses, explicit,
                                                            own_address=address)
        self._token_address = address
        from .shm import sweep_dead
        sweep_dead()   # segments of this host's killed tasks
        try:
            self._bind(address, job_name, task_index)
        except BaseException:
            self._withdraw_token()
            raise
        port = self._port
        bound = f"{address.rpartition(':')[0]}:{port}"
        if bound != address:  # port 0: the cluster learns the port the OS chose
            cluster = _with_address(cluster, job_name, task_index, bound)
        self._address = bound
        device_count = getattr(config, "device_count", None) if config is not None else None
        gpu_options = getattr(config, "gpu_options", None) if config is not None else None
        self._devices = local_devices(job_name, 0, task_index, device_count, gpu_options)
        credentials = self._tls.channel_credentials() if self._tls.enabled else None
        self._worker = Worker(job_name, task_index, self._devices, cluster, self._token, credentials)
        self._grpc.add_generic_rpc_handlers((_service_handlers(self._worker),
                                             _telemetry_handler(self),
                                             _server_handlers(self)))
        self.server_def = ServerDef(cluster, job_name, task_index, protocol, config)
        self._set_cluster(cluster)
        atexit.register(_stop_at_exit, weakref.ref(self))
        _log.info("Started server with target: %s", self.target)
        if start:
            self.start()

    def _bind(self, address: str, job_name: str, task_index: int) -> None:
        self._grpc = grpc.server(
            ElasticThreadPool(f"tfjupyter-{job_name}{task_index}"),
            interceptors=[TokenInterceptor(self._token)],
            # Peers ping every 5 s (channel_options), also between calls: accept that,
            # instead of answering their "too many pings" with GOAWAY.
            options=channel_options() + (("grpc.http2.min_ping_interval_without_data_ms", 5000),
                                         ("grpc.http2.min_recv_ping_interval_without_data_ms",
                                          4000),
                                         ("grpc.http2.max_ping_strikes", 0),
                                         ("grpc.so_reuseport", 0)),
            maximum_concurrent_rpcs=_MAX_CONCURRENT_RPCS)
        try:
            if self._tls.enabled:
                port = self._grpc.add_secure_port(address, self._tls.server_credentials())
            else:
                port = self._grpc.add_insecure_port(address)
        except RuntimeError:   # grpcio >= 1.5x raises where older ones returned 0
            port = 0
        if port == 0:
            raise errors.UnavailableError(None, None, f"Server for /job:{job_name}/task:{task_index}"
                                          f" could not bind {address}: is the port in use?")
        self._port = port

    def _withdraw_token(self) -> None:
        """The token file goes with the task: a later cluster on this port makes its own."""
        if self._token_published:
            self._token_published = False
            withdraw_token(self._token_address, self._token)

    # -- TensorFlow's API ------------------------------------------------------------------------
    @property
    def target(self) -> str:
        return f"grpc://{self._address}"

    @property
    def token(self) -> str:
        """The cluster token clients and peers must present (keep it secret)."""
        return self._token

    @property
    def devices(self):
        return list(self._devices)

    def start(self) -> None:
        with self._lock:
            if self._stopped:
                raise RuntimeError("Server: cannot start a stopped server")
            if not self._started:
                self._grpc.start()
                self._worker.listen_locally()
                self._started = True

    def join(self, timeout: Optional[float] = None) -> None:
        """Blocks until the server stops (TensorFlow's join blocks forever)."""
        self._stop_event.wait(timeout)

    def stop(self, grace: Optional[float] = 1.0) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._worker.close()
        self._grpc.stop(grace).wait(grace)
        self._withdraw_token()
        self._stop_event.set()
        _unregister_local_server(self)

    @property
    def port(self) -> int:
        """The port this server holds (the one the OS chose when the cluster said 0)."""
        return self._port

    def complete_cluster(self, cluster) -> None:
        """Gives a server that is not started yet the whole cluster.

        A cluster whose tasks bind port 0 on several hosts is assembled in two phases: every task
        first binds (holding its port, so no other process can take it), then the driver sends
        all of them the ClusterSpec built from the ports they hold. This task's entry must name
        the port this server holds; its host may differ from the bound one (a server bound to
        0.0.0.0 is reached by its host name).
        """
        cluster = ClusterSpec(cluster)
        job, task = self.server_def.job_name, self.server_def.task_index
        address = cluster.task_address(job, task)
        if address.rpartition(":")[2] != str(self._port):
            raise ValueError(f"complete_cluster: /job:{job}/task:{task} is at {address!r} in the "
                             f"new cluster, but this server holds port {self._port}")
        with self._lock:
            if self._started:
                raise RuntimeError("Server: complete_cluster must come before start()")
        _unregister_local_server(self)
        self._address = address
        self._set_cluster(cluster)

    def update_cluster(self, cluster) -> None:
        """Gives a running server the cluster after tasks were added or removed (the driver of
        a notebook's cluster scales it). This task keeps its address; its worker looks peers
        up in the new cluster from now on, and so do sessions opened on it later (a master
        learns the cluster from its target's GetStatus)."""
        cluster = ClusterSpec(cluster)
        job, task = self.server_def.job_name, self.server_def.task_index
        try:
            address = cluster.task_address(job, task)
        except ValueError:
            raise ValueError(f"update_cluster: /job:{job}/task:{task} is not in the new cluster "
                             f"{cluster.as_dict()}") from None
        if address != self._address:
            raise ValueError(f"update_cluster: /job:{job}/task:{task} is at {address!r} in the "
                             f"new cluster, but this server serves {self._address!r}")
        with self._lock:
            self._set_cluster(cluster)

    def _set_cluster(self, cluster: ClusterSpec) -> None:
        job, task = self.server_def.job_name, self.server_def.task_index
        self._cluster = cluster
        self._worker.cluster = cluster
        self.server_def.cluster = cluster
        _limit_intra_op_threads(cluster, job, task, self._config)
        _register_local_server(self)

    @staticmethod
    def create_local_server(config=None, start: bool = True) -> "Server":
        """A one-task cluster on a free loopback port."""
        return Server({"local": ["localhost:0"]}, job_name="local", task_index=0,
                      protocol="grpc", config=config, start=start)

    def __repr__(self) -> str:
        return (f"<tf.train.Server /job:{self.server_def.job_name}/task:"
                f"{self.server_def.task_index} at {self.target}>")


UPDATE_CLUSTER_METHOD = "/tfjupyter.Server/UpdateCluster"


def _server_handlers(server: Server) -> grpc.GenericRpcHandler:
    """``UpdateCluster`` (JSON ``{"cluster": {job: [[index, address], ...]}}``): how a driver
    tells a server whose process is busy running a cell that the cluster changed."""
    import json
    from .wire import rpc_method_handler

    def update(request: bytes, context) -> bytes:
        try:
            jobs = json.loads(request)["cluster"]
            cluster = {job: {int(i): a for i, a in tasks} for job, tasks in jobs.items()}
            server.update_cluster(cluster)
        except (ValueError, TypeError, KeyError) as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        return b"{}"
    return grpc.method_handlers_generic_handler("tfjupyter.Server", {
        "UpdateCluster": rpc_method_handler("UpdateCluster", lambda: server._worker.task_name,
                                            update)})


def send_cluster_update(address: str, cluster, token: str, timeout: float = 10.0,
                        tls: Optional[TlsConfig] = None) -> None:
    """Calls ``UpdateCluster`` on the server at ``address`` (see ``Server.update_cluster``);
    raises the OpError its failure maps to (UnavailableError when it cannot be reached)."""
    import json
    from .auth import TOKEN_METADATA_KEY
    from .worker import make_channel, rpc_error

    tls = tls or TlsConfig()
    jobs = {job: [[i, a] for i, a in enumerate(tasks)] if isinstance(tasks, list)
            else [[i, a] for i, a in tasks.items()]
            for job, tasks in ClusterSpec(cluster).as_dict().items()}
    channel = make_channel(address, tls.channel_credentials() if tls.enabled else None)
    try:
        channel.unary_unary(UPDATE_CLUSTER_METHOD)(
            json.dumps({"cluster": jobs}).encode(), timeout=timeout,
            metadata=((TOKEN_METADATA_KEY, token),))
    except grpc.RpcError as e:
        raise rpc_error(e, f"UpdateCluster on {address}") from None
    finally:
        channel.close()


# Servers of this process, by address: a Session on their target needs no token lookup.
_local_servers = {}


def _register_local_server(server: Server) -> None:
    _local_servers[server._address] = server


def _unregister_local_server(server: Server) -> None:
    if _local_servers.get(server._address) is server:
        del _local_servers[server._address]


def _limit_intra_op_threads(cluster: ClusterSpec, job: str, task: int, config) -> None:
    """Sizes the intra-op threads (BLAS, Numba, split kernels) of this task's process.

    ``ConfigProto(intra_op_parallelism_threads=N)`` decides when given. Otherwise, when several
    tasks of the cluster share this host (loopback addresses), they share its cores: each gets
    its part of the BLAS's and Numba's threads, since oversubscribed BLAS threads spin against
    each other and the RPC threads (measured: 3x slower steps for 3 tasks on 2 cores). Big
    kernels still split their work over all the cores (kernels/cpu/_threads.py)."""
    import os
    from ..kernels.cpu._threads import set_intra_op_threads
    n = getattr(config, "intra_op_parallelism_threads", 0) if config is not None else 0
    if n:
        set_intra_op_threads(n)
    elif is_loopback(cluster.task_address(job, task)):
        local = sum(1 for _, _, a in cluster.tasks() if is_loopback(a))
        set_intra_op_threads(max(1, (os.cpu_count() or 1) // max(1, local)), split_kernels=False)


def _with_address(cluster: ClusterSpec, job: str, task: int, address: str) -> ClusterSpec:
    jobs = cluster.as_dict()
    tasks = dict(enumerate(jobs[job])) if isinstance(jobs[job], list) else jobs[job]
    tasks[task] = address
    jobs[job] = tasks
    return ClusterSpec(jobs)


def _stop_at_exit(ref) -> None:
    server = ref()
    if server is not None:
        server.stop(0)


def local_server_token(address: str) -> Optional[str]:
    server = _local_servers.get(address)
    return server.token if server is not None else None


def local_server(address: str) -> Optional[Server]:
    """The server running in this process at ``address`` (None if there is none): a notebook
    cluster's engine already serves its task, so an Estimator there uses it."""
    server = _local_servers.get(address)
    return server if server is not None and not server._stopped else None


def local_worker(address: str) -> Optional[Worker]:
    """The worker of a server running in this process at ``address`` (None if there is none)."""
    server = _local_servers.get(address)
    return server._worker if server is not None and not server._stopped else None
