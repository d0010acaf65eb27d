"""``tf.estimator.RunConfig`` (TF 1.15): an Estimator's checkpoint, summary and session settings,
and its place in a cluster, parsed from the ``TF_CONFIG`` environment variable as TensorFlow
does::

    TF_CONFIG='{"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222"], "ps": ["h2:2222"]},
                "task": {"type": "worker", "index": 0}}'

A cluster must have exactly one ``chief`` (or, in the legacy form, one ``master``); the chief is
the worker that initializes, checkpoints and writes summaries. An ``evaluator`` task is not part
of the training cluster. Task types, indices and errors are TensorFlow's.
"""
from __future__ import annotations

import copy
import json
import os
from typing import Optional

from ..client.config import ConfigProto
from ..distributed.cluster import ClusterSpec

__all__ = ["RunConfig", "TaskType"]

_USE_DEFAULT = object()
_SAVE_CKPT_ERR = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."
_REPLACEABLE = ("model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
                "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
                "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute",
                "device_fn", "protocol", "eval_distribute", "experimental_distribute",
                "experimental_max_worker_delay_secs", "session_creation_timeout_secs")


class TaskType:
    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


class RunConfig:
    """Configuration of an Estimator's runs; the distributed properties come from
    ``TF_CONFIG`` (read when the RunConfig is made)."""

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=_USE_DEFAULT, save_checkpoints_secs=_USE_DEFAULT,
                 session_config=None, keep_checkpoint_max=5,
                 keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
                 train_distribute=None, device_fn=None, protocol=None, eval_distribute=None,
                 experimental_distribute=None, experimental_max_worker_delay_secs=None,
                 session_creation_timeout_secs=7200):
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, 600
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError(_SAVE_CKPT_ERR)
        if train_distribute is not None or eval_distribute is not None or \
                experimental_distribute is not None:
            raise NotImplementedError("RunConfig: distribution strategies (train_distribute, "
                                      "eval_distribute) are not supported; use TF_CONFIG's "
                                      "between-graph training")
        tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
        if model_dir is not None:
            model_dir = os.fspath(model_dir)
        self._model_dir = _model_dir_with_tf_config(model_dir, tf_config)
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = save_checkpoints_steps
        self._save_checkpoints_secs = save_checkpoints_secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._train_distribute = self._eval_distribute = self._experimental_distribute = None
        self._device_fn = device_fn
        self._protocol = protocol
        self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        self._session_creation_timeout_secs = session_creation_timeout_secs
        _validate_properties(self)
        self._init_distributed_setting(tf_config)

    # -- TF_CONFIG -------------------------------------------------------------------------------
    def _init_distributed_setting(self, tf_config: dict) -> None:
        service = tf_config.get("service")
        if service is not None and not isinstance(service, dict):
            raise TypeError('If "service" is set in TF_CONFIG, it must be a dict. Given '
                            f"{type(service)}")
        self._service = service
        self._cluster_spec = ClusterSpec(tf_config.get("cluster", {}))
        task_env = tf_config.get("task", {})
        if self._cluster_spec and TaskType.MASTER in self._cluster_spec.jobs:
            if TaskType.CHIEF in self._cluster_spec.jobs:
                raise ValueError("If `master` node exists in `cluster`, job `chief` is not "
                                 "supported.")
            chief = TaskType.MASTER
        else:
            chief = TaskType.CHIEF
        if not self._cluster_spec:   # local
            self._task_type = task_env.get("type", TaskType.WORKER)
            self._task_id = int(task_env.get("index", 0))
            if self._task_type != TaskType.WORKER:
                raise ValueError('If "cluster" is not set in TF_CONFIG, task type must be '
                                 "WORKER.")
            if self._task_id != 0:
                raise ValueError('If "cluster" is not set in TF_CONFIG, task index must be 0.')
            self._master = tf_config.get("session_master", "")
            self._evaluation_master = tf_config.get("eval_session_master", "")
            self._is_chief, self._num_ps_replicas, self._num_worker_replicas = True, 0, 1
            self._global_id_in_cluster = 0
            return
        self._task_type, self._task_id = _validate_task(self._cluster_spec, task_env, chief)
        if chief == TaskType.MASTER and self._task_type == TaskType.EVALUATOR:
            raise ValueError("If `master` node exists in `cluster`, task_type `evaluator` is "
                             "not supported.")
        self._evaluation_master = (tf_config.get("eval_session_master", "")
                                   if self._task_type == TaskType.EVALUATOR else "")
        if self._task_type == TaskType.EVALUATOR:   # not part of the training cluster
            self._cluster_spec = ClusterSpec({})
            self._master, self._num_ps_replicas, self._num_worker_replicas = "", 0, 0
            self._global_id_in_cluster = None
        else:
            self._master = _session_master(self._cluster_spec, self._task_type, self._task_id,
                                           tf_config)
            jobs = self._cluster_spec.jobs
            self._num_ps_replicas = self._cluster_spec.num_tasks(TaskType.PS) \
                if TaskType.PS in jobs else 0
            self._num_worker_replicas = sum(self._cluster_spec.num_tasks(j)
                                            for j in (TaskType.WORKER, chief) if j in jobs)
            self._global_id_in_cluster = _global_id(self._cluster_spec, self._task_type,
                                                    self._task_id, chief)
        self._is_chief = self._task_type == chief

    # -- properties ------------------------------------------------------------------------------
    cluster_spec = property(lambda self: self._cluster_spec)
    task_type = property(lambda self: self._task_type)
    task_id = property(lambda self: self._task_id)
    is_chief = property(lambda self: self._is_chief)
    master = property(lambda self: self._master)
    evaluation_master = property(lambda self: self._evaluation_master)
    num_ps_replicas = property(lambda self: self._num_ps_replicas)
    num_worker_replicas = property(lambda self: self._num_worker_replicas)
    global_id_in_cluster = property(lambda self: self._global_id_in_cluster)
    service = property(lambda self: self._service)
    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    train_distribute = property(lambda self: self._train_distribute)
    eval_distribute = property(lambda self: self._eval_distribute)
    experimental_distribute = property(lambda self: self._experimental_distribute)
    device_fn = property(lambda self: self._device_fn)
    protocol = property(lambda self: self._protocol)
    experimental_max_worker_delay_secs = property(
        lambda self: self._experimental_max_worker_delay_secs)
    session_creation_timeout_secs = property(lambda self: self._session_creation_timeout_secs)

    def replace(self, **kwargs) -> "RunConfig":
        """A copy with the given properties replaced (only TF's replaceable ones)."""
        new = copy.deepcopy(self)
        for key, value in kwargs.items():
            if key not in _REPLACEABLE:
                raise ValueError(f"{key} is not supported by RunConfig replace")
            setattr(new, "_" + key, value)
        steps, secs = new.save_checkpoints_steps, new.save_checkpoints_secs
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs:
            if steps is not None and secs is not None:
                raise ValueError(_SAVE_CKPT_ERR)
        elif "save_checkpoints_steps" in kwargs and steps is not None:
            new._save_checkpoints_secs = None
        elif "save_checkpoints_secs" in kwargs and secs is not None:
            new._save_checkpoints_steps = None
        _validate_properties(new)
        return new


def _model_dir_with_tf_config(model_dir: Optional[str], tf_config: dict) -> Optional[str]:
    if model_dir == "":
        raise ValueError("model_dir should be non-empty.")
    in_config = tf_config.get("model_dir")
    if in_config == "":
        raise ValueError("model_dir in TF_CONFIG should be non-empty.")
    if in_config:
        if model_dir and in_config != model_dir:
            raise ValueError("`model_dir` provided in RunConfig construct, if set, must have "
                             "the same value as the model_dir in TF_CONFIG. "
                             f"model_dir: {model_dir}\nTF_CONFIG[\"model_dir\"]: {in_config}.\n")
        return in_config
    return model_dir


def _validate_properties(config: RunConfig) -> None:
    def check(name, ok, message):
        value = getattr(config, name)
        if value is not None and not ok(value):
            raise ValueError(message)
    check("save_summary_steps", lambda v: v >= 0, "save_summary_steps should be >= 0")
    check("save_checkpoints_steps", lambda v: v >= 0, "save_checkpoints_steps should be >= 0")
    check("save_checkpoints_secs", lambda v: v >= 0, "save_checkpoints_secs should be >= 0")
    check("session_config", lambda v: isinstance(v, ConfigProto),
          "session_config must be instance of ConfigProto")
    check("keep_checkpoint_max", lambda v: v >= 0, "keep_checkpoint_max should be >= 0")
    check("keep_checkpoint_every_n_hours", lambda v: v > 0,
          "keep_checkpoint_every_n_hours should be > 0")
    check("log_step_count_steps", lambda v: v > 0, "log_step_count_steps should be > 0")
    check("tf_random_seed", lambda v: isinstance(v, int), "tf_random_seed must be integer.")
    check("session_creation_timeout_secs", lambda v: v > 0,
          "session_creation_timeout_secs should be > 0")
    check("device_fn", callable, 'device_fn must be callable with exactly one argument "op".')
    check("protocol", lambda v: v in (None, "grpc", "grpc+verbs"),
          "protocol should be grpc or grpc+verbs")


def _validate_task(cluster: ClusterSpec, task_env: dict, chief: str):
    if chief not in cluster.jobs:
        raise ValueError(f'If "cluster" is set in TF_CONFIG, it must have one "{chief}" node.')
    if cluster.num_tasks(chief) > 1:
        raise ValueError(f'The "cluster" in TF_CONFIG must have only one "{chief}" node.')
    task_type, task_id = task_env.get("type"), task_env.get("index")
    if not task_type:
        raise ValueError('If "cluster" is set in TF_CONFIG, task type must be set.')
    if task_id is None:
        raise ValueError('If "cluster" is set in TF_CONFIG, task index must be set.')
    task_id = int(task_id)
    if task_id < 0:
        raise ValueError("Task index must be non-negative number.")
    if task_type == TaskType.EVALUATOR:
        return task_type, task_id
    note = "\n\nNote that these values may be coming from the TF_CONFIG environment variable."
    if task_type not in cluster.jobs:
        raise ValueError(f"{task_type} is not a valid task_type in the cluster_spec:\n"
                         f"{cluster}{note}")
    if not 0 <= task_id < cluster.num_tasks(task_type):
        raise ValueError(f"{task_id} is not a valid task_id for task_type {task_type} in the "
                         f"cluster_spec:\n{cluster}{note}")
    return task_type, task_id


def _session_master(cluster: ClusterSpec, task_type: str, task_id: int, tf_config: dict) -> str:
    if "session_master" in tf_config:
        return tf_config["session_master"]
    jobs = cluster.jobs
    if len(jobs) == 1 and cluster.num_tasks(jobs[0]) == 1:
        return ""
    return "grpc://" + cluster.task_address(task_type, task_id)


def _global_id(cluster: ClusterSpec, task_type: str, task_id: int, chief: str) -> int:
    """Chief first, then the other jobs sorted, ps last (TF's numbering)."""
    order = [chief] + [j for j in sorted(cluster.jobs) if j not in (chief, TaskType.PS)]
    if TaskType.PS in cluster.jobs:
        order.append(TaskType.PS)
    next_id = 0
    for job in order:
        if job == task_type:
            return next_id + task_id
        next_id += cluster.num_tasks(job)
    raise RuntimeError(f"Internal Error: `task_type` ({task_type}) is not in cluster_spec "
                       f"({cluster}).")
