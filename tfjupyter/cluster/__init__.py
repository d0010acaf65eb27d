"""Clusters in the notebook: ps and worker tasks on ipyparallel engines.

Roles, as in ipyparallel's own layout: ``cluster`` (the driver, in the notebook's kernel or a
script: starts or attaches an ipyparallel cluster, keeps the engine -> task table, runs code on
tasks, reports status), ``engine`` (what runs inside each engine: the task's gRPC server),
``launch`` (which launcher starts which task where), ``processes`` (ipyparallel's controller
and engine processes: started through its launchers, stopped with nothing left behind), ``runs``
(output and errors of code run on tasks), ``status`` (the status table), ``registry`` (the
entries JupyterLab's cluster panel reads), ``lease`` (the controller and engines exit when the
kernel that started them dies). The magics (``%tf_cluster``, ``%%tf_worker``) are thin
clients of ``Cluster``.
"""
from .cluster import Cluster, Task
from .launch import ClusterError
from .runs import Run, TaskError

__all__ = ["Cluster", "ClusterError", "Run", "Task", "TaskError"]
