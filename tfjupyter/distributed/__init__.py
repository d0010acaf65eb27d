"""The distributed runtime: ClusterSpec, Server, and the master and worker roles over gRPC.

Roles: ``server`` (a task, any process) hosts a ``worker`` (runs graph partitions, serves
tensors); ``master`` (in the client's process) places, partitions and runs steps for a
``tf.Session(server.target)``. ``wire`` frames tensors; ``auth`` holds the cluster token and TLS.
``telemetry`` serves per-task telemetry (Telemetry.Poll); ``watch()`` follows it from a notebook.
"""
from __future__ import annotations

__all__ = ["ClusterSpec", "Server", "watch"]


def __getattr__(name):  # grpc is imported only when a cluster is used
    if name == "ClusterSpec":
        from .cluster import ClusterSpec
        return ClusterSpec
    if name == "Server":
        from .server import Server
        return Server
    if name == "watch":
        from .telemetry import watch
        return watch
    raise AttributeError(name)
