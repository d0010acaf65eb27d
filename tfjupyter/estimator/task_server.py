"""The ``tf.train.Server`` of the task a RunConfig describes (TF_CONFIG), and the devices and
session master an Estimator uses on it.

TensorFlow's Estimator starts the server of its task itself. On a notebook cluster the engine
already serves the task (``%%tf_worker`` puts the Estimator in that process), under the job name
the cluster gave it: ``TF_CONFIG`` there calls worker 0 ``chief`` as TensorFlow requires, while
its server is ``/job:worker/task:0``. So when a server of this process already serves the
task's address, the Estimator uses that server, its target and its device names; otherwise it
starts one exactly as TensorFlow does.
"""
from __future__ import annotations

import logging
from typing import Optional

from ..client.config import ConfigProto
from ..train import device_setter

__all__ = ["running_server", "start_std_server", "worker_device", "session_master",
           "replica_device_setter", "tf_config_for_task"]

_log = logging.getLogger("tfjupyter")


def tf_config_for_task(cluster, job_name: str, task_index: int) -> dict:
    """The ``TF_CONFIG`` of one task of a notebook cluster (ps and worker jobs), in the form
    TensorFlow's RunConfig requires: worker 0, the cluster's chief, is the ``chief``; the other
    workers are ``worker`` 0, 1, ... in the order of their indices; other jobs keep their
    names and indices."""
    jobs = cluster.as_dict()
    workers = jobs.pop("worker", [])
    workers = dict(enumerate(workers)) if isinstance(workers, list) else dict(workers)
    names = {}   # (job, index) in the cluster -> (type, index) in TF_CONFIG
    if 0 in workers:
        jobs["chief"] = [workers.pop(0)]
        names[("worker", 0)] = ("chief", 0)
    if workers:
        jobs["worker"] = [workers[i] for i in sorted(workers)]
        names.update({("worker", i): ("worker", n) for n, i in enumerate(sorted(workers))})
    task_type, index = names.get((job_name, task_index), (job_name, task_index))
    return {"cluster": jobs, "task": {"type": task_type, "index": index}}


def running_server(config):
    """The server of this process that serves the config's task, or None."""
    if not config.cluster_spec or config.task_type not in config.cluster_spec.jobs:
        return None
    from ..distributed.server import local_server
    return local_server(config.cluster_spec.task_address(config.task_type, config.task_id))


def start_std_server(config):
    """The task's server: the one already running here, else a new, started one."""
    if not config.cluster_spec:
        raise RuntimeError("Internal error: `_start_std_server` should be called with "
                           "config.cluster_spec. (Not be called in local mode.)")
    if not config.task_type:
        raise RuntimeError("Internal error: `_start_std_server` should be called with "
                           "config.task_type set.")
    if config.task_id is None:
        raise RuntimeError("Internal error: `_start_std_server` should be called with "
                           "config.task_id set.")
    server = running_server(config)
    if server is not None:
        _log.info("Using the server this process runs for %s:%d: %s", config.task_type,
                  config.task_id, server.target)
        return server
    from ..distributed.server import Server
    _log.info("Start Tensorflow server.")
    return Server(config.cluster_spec, job_name=config.task_type, task_index=config.task_id,
                  config=config.session_config or ConfigProto(), start=True,
                  protocol=config.protocol)


def worker_device(config) -> str:
    """Where this task's ops go: its server's job and task."""
    server = running_server(config)
    if server is not None:
        return f"/job:{server.server_def.job_name}/task:{server.server_def.task_index}"
    if config.task_type:
        return f"/job:{config.task_type}/task:{config.task_id}"
    return "/job:worker"


def session_master(config) -> str:
    """The target training sessions open: this process's server of the task, else
    ``config.master`` (TF's)."""
    server = running_server(config)
    return server.target if server is not None else config.master


def replica_device_setter(config):
    """TF's Estimator device function: variables round-robin on the ps tasks, the rest on this
    worker; None without ps tasks."""
    if config.num_ps_replicas <= 0:
        return None
    return device_setter.replica_device_setter(
        ps_tasks=config.num_ps_replicas, worker_device=worker_device(config),
        merge_devices=True, ps_ops=list(device_setter.STANDARD_PS_OPS),
        cluster=config.cluster_spec)
