"""What runs inside each ipyparallel engine: one task of the cluster.

The driver (``cluster.Cluster``) calls these functions on the engines, in two phases, so that no
port can be raced for: ``bind`` makes the task's ``tf.train.Server`` hold an OS-chosen port and
reports it; once every task holds its port, ``serve`` gives each server the whole ClusterSpec and
starts it, and puts the names a ``%%tf_worker`` cell uses into the engine's namespace.
"""
from __future__ import annotations

import os
import socket
import sys
from typing import Dict, List, Optional

__all__ = ["ROLE_ENV", "role", "bind", "serve", "namespace", "stop", "process_info",
           "NAMESPACE_CODE"]

# The launcher gives each engine its role in the environment ("worker:1"): ipyparallel does not
# tag engines, so this is how the driver builds its engine id -> task table.
ROLE_ENV = "TFJUPYTER_TASK"

_server = None


def role() -> Optional[str]:
    return os.environ.get(ROLE_ENV)


def process_info() -> Dict:
    return {"pid": os.getpid(), "hostname": socket.gethostname(), "python": sys.executable}


def bind(job: str, task: int, advertise_host: Optional[str], bind_host: str, token: str,
         port: int = 0) -> Dict:
    """Phase 1: a server for /job:{job}/task:{task} holding a port on ``bind_host``: the one the
    OS chooses, or ``port`` (a restarted task takes its old port, so the ClusterSpec holds)."""
    global _server
    from ..distributed.auth import ENV_TOKEN
    from ..distributed.server import Server

    if _server is not None:
        _server.stop(0)
        _server = None
    # Sessions opened by the cells of this engine find the cluster's token here.
    os.environ[ENV_TOKEN] = token
    advertise_host = advertise_host or socket.getfqdn()
    _server = Server({job: {task: f"{bind_host}:{port}"}}, job_name=job, task_index=task,
                     start=False, token=token)
    # The engine exits if its cluster's kernel dies (through the controller): lease.py.
    from .lease import hold_controller_lease
    hold_controller_lease()
    return dict(process_info(), address=f"{advertise_host}:{_server.port}",
                devices=_describe_devices(_server.devices))


def serve(cluster: Dict) -> str:
    """Phase 2: the whole cluster is known; start serving it."""
    if _server is None:
        raise RuntimeError("tfjupyter: this engine holds no task server (bind was not called)")
    _server.complete_cluster(cluster)
    _server.start()
    return _server.target


def namespace() -> Dict:
    """The names every ``%%tf_worker``/``%%tf_ps`` cell finds defined."""
    import tfjupyter as tf

    spec = _server.server_def
    cluster = spec.cluster
    num_workers = cluster.num_tasks("worker") if "worker" in cluster.jobs else 0
    # tf.estimator's RunConfig reads the task's place in the cluster from TF_CONFIG.
    from ..estimator.task_server import tf_config_for_task
    import json
    os.environ["TF_CONFIG"] = json.dumps(tf_config_for_task(cluster, spec.job_name,
                                                            spec.task_index))
    return {"tf": tf, "cluster": cluster, "server": _server, "job_name": spec.job_name,
            "task_index": spec.task_index,
            "is_chief": spec.job_name == "worker" and spec.task_index == 0,
            "num_workers": num_workers}


# Run on an engine (queued behind the cell it runs, if any): its names follow its server's
# cluster, at start and after a scale.
NAMESPACE_CODE = ("import tfjupyter.cluster.engine as _tfj_engine\n"
                  "globals().update(_tfj_engine.namespace())\ndel _tfj_engine")


def stop() -> None:
    global _server
    if _server is not None:
        _server.stop(0.5)
        _server = None


def _describe_devices(devices) -> List[Dict]:
    described = []
    for d in devices:
        physical = getattr(getattr(d, "state", None), "physical", None)
        described.append({"name": d.name, "type": d.device_type, "description": d.description,
                          "memory_bytes": getattr(physical, "total_memory", None)})
    return described
