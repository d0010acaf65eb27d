"""``tf.train.replica_device_setter``: device functions for between-graph replication.

Every worker builds the same graph under ``tf.device(tf.train.replica_device_setter(...))``:
variable ops go to parameter-server tasks (round robin, or a ``ps_strategy`` such as
``GreedyLoadBalancingStrategy``), every other op to ``worker_device``. Ops created with a
variable (``w/Assign``, ``w/read``, optimizer slots) are created inside ``colocate_with(w)``,
which hides device functions, so they follow ``w`` to its ps task without consuming a turn of
the strategy, as in TensorFlow.

``GreedyLoadBalancingStrategy`` and ``byte_size_load_fn`` are TensorFlow's
``tf.contrib.training`` names.
"""
from __future__ import annotations

import logging
import numbers
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

from ..framework import dtypes
from ..framework.device import DeviceSpec, as_spec
from ..framework.ops import Operation
from ..framework.tensor_shape import as_shape

__all__ = ["replica_device_setter"]

_log = logging.getLogger("tfjupyter")

# The op types TensorFlow places on parameter servers by default.
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                   "MutableHashTableV2", "MutableHashTableOfTensors",
                   "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp")

DeviceLike = Union[None, str, DeviceSpec]


# -- strategies ------------------------------------------------------------------------------------
class _RoundRobinStrategy:
    """Returns the ps task indices 0, 1, ..., num_tasks - 1, 0, 1, ... in turn."""

    def __init__(self, num_tasks: int):
        self._num_tasks = _check_num_tasks(num_tasks, "_RoundRobinStrategy")
        self._next_task = 0

    def __call__(self, unused_op: Operation) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """Returns the least-loaded ps task for each op, by a user-supplied load function.

    The load of a task is the sum of ``load_fn(op)`` over the ops already given to it; ties go
    to the lowest task index. The result depends on the order in which variables are created
    (greedy, not optimal). ``byte_size_load_fn`` is a reasonable ``load_fn``.
    """

    def __init__(self, num_tasks: int, load_fn: Callable[[Operation], float]):
        self._num_tasks = _check_num_tasks(num_tasks, "GreedyLoadBalancingStrategy")
        if not callable(load_fn):
            raise TypeError(f"GreedyLoadBalancingStrategy: load_fn must be callable, "
                            f"got {load_fn!r}")
        self._load_fn = load_fn
        self._ps_loads: List[float] = [0.0] * self._num_tasks

    def __call__(self, op: Operation) -> int:
        load = self._load_fn(op)
        if isinstance(load, bool) or not isinstance(load, numbers.Real):
            raise TypeError(f"GreedyLoadBalancingStrategy: load_fn returned {load!r} for op "
                            f"'{op.name}' ({op.type}); it must return a number")
        task = min(range(self._num_tasks), key=self._ps_loads.__getitem__)
        self._ps_loads[task] += float(load)
        return task


def byte_size_load_fn(op: Operation) -> int:
    """The bytes a variable op stores: elements of its static shape times its dtype's size.

    Variable ops (VariableV2, VarHandleOp, ...) are measured by their ``shape`` and ``dtype``
    attrs; any other op by its single output.

    Raises:
      ValueError: if ``op`` is not a variable op and has no single output, or its shape is not
        fully defined.
    """
    shape, dtype = _shape_and_dtype(op)
    if not shape.is_fully_defined():
        raise ValueError(f"Op {op.name} ({op.type}) must have a fully defined shape to compute "
                         f"its byte size, but its shape is {shape}")
    return shape.num_elements() * dtype.size


def _shape_and_dtype(op: Operation):
    attrs = op._attrs
    if "shape" in attrs and "dtype" in attrs:
        return as_shape(attrs["shape"]), dtypes.as_dtype(attrs["dtype"])
    outputs = op.outputs
    if len(outputs) != 1:
        raise ValueError(f"Op {op.name} ({op.type}) must have a single output (it has "
                         f"{len(outputs)}) for byte_size_load_fn")
    return outputs[0].shape, outputs[0].dtype


def _check_num_tasks(num_tasks: Any, who: str) -> int:
    if isinstance(num_tasks, bool) or not isinstance(num_tasks, numbers.Integral):
        raise TypeError(f"{who}: num_tasks must be an integer, got {num_tasks!r}")
    if num_tasks <= 0:
        raise ValueError(f"{who}: num_tasks must be positive, got {num_tasks}")
    return int(num_tasks)


# -- the device function -----------------------------------------------------------------------
class _ReplicaDeviceChooser:
    """TensorFlow's chooser: ps ops to ``ps_device`` (task from the strategy), others to
    ``worker_device``; fields already set on the op (by inner device scopes) win."""

    def __init__(self, ps_tasks: int, ps_device: Optional[DeviceSpec],
                 worker_device: DeviceSpec, merge_devices: bool, ps_ops: Iterable[str],
                 ps_strategy: Callable[[Operation], int], task_ids: Optional[Sequence[int]]):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = frozenset(ps_ops)
        self._ps_strategy = ps_strategy
        self._task_ids = task_ids  # strategy index -> ps task id, when the ids are not 0..n-1

    def device_function(self, op: Operation) -> str:
        # Past this point either merge_devices is set or op.device is empty, so merging the
        # op's own device into the chosen one is always right.
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device) if op.device else DeviceSpec()
        if self._ps_tasks and self._ps_device is not None and op.type in self._ps_ops:
            ps_device = self._ps_device
            # The strategy picks the task only when the op is not pinned to another job.
            if ps_device.job and (current.job is None or current.job == ps_device.job):
                ps_device = ps_device.replace(task=self._choose_task(op))
            return ps_device.make_merged_spec(current).to_string()
        return self._worker_device.make_merged_spec(current).to_string()

    def _choose_task(self, op: Operation) -> int:
        index = self._ps_strategy(op)
        if isinstance(index, bool) or not isinstance(index, numbers.Integral) \
                or not 0 <= index < self._ps_tasks:
            raise ValueError(f"replica_device_setter: ps_strategy returned {index!r} for op "
                             f"'{op.name}' ({op.type}); it must return a ps task index in "
                             f"[0, {self._ps_tasks})")
        return self._task_ids[index] if self._task_ids is not None else int(index)

    def __repr__(self) -> str:
        return (f"<replica_device_setter ps_tasks={self._ps_tasks} "
                f"ps_device={_str(self._ps_device)!r} "
                f"worker_device={_str(self._worker_device)!r}>")


def replica_device_setter(ps_tasks: int = 0, ps_device: DeviceLike = "/job:ps",
                          worker_device: DeviceLike = "/job:worker", merge_devices: bool = True,
                          cluster=None, ps_ops: Optional[Sequence[str]] = None,
                          ps_strategy: Optional[Callable[[Operation], int]] = None
                          ) -> Optional[Callable[[Operation], str]]:
    """Returns a device function to use when building a graph for replicas.

    Use it with ``tf.device`` so that variables go to parameter servers and everything else to
    this worker::

        cluster = {"ps": ["ps0:2222", "ps1:2222"],
                   "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]}
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            v1 = tf.Variable(...)  # /job:ps/task:0
            v2 = tf.Variable(...)  # /job:ps/task:1
            v3 = tf.Variable(...)  # /job:ps/task:0
            y = tf.matmul(x, v1)   # /job:worker

    Args:
      ps_tasks: number of ps tasks; ignored when ``cluster`` is given.
      ps_device: the ps job's device, e.g. "/job:ps"; its task is chosen by ``ps_strategy``.
      worker_device: the device of every op that is not a ps op, e.g. "/job:worker/task:0".
      merge_devices: if True, fields of a device already set on an op (by an inner
        ``tf.device``) win over the chosen device; if False, ops that already have a device
        keep it unchanged.
      cluster: a ``ClusterSpec`` (anything with ``as_dict()``), a dict of job name to task
        addresses, or a ``ClusterDef`` protocol buffer; the number of ps tasks is the number of
        tasks of ``ps_device``'s job in it.
      ps_ops: the op types to place on ps tasks; default: TensorFlow's variable ops.
      ps_strategy: a callable ``op -> task index`` choosing the ps task of each ps op; default:
        round robin.

    Returns:
      A device function, or None when there are no ps tasks (``ps_tasks`` is 0, or the cluster
      has no ps job).

    Raises:
      TypeError: if ``cluster`` is not a dictionary, ClusterSpec or ``ClusterDef``, or
        ``ps_strategy`` is given but not callable.
    """
    ps_spec = _parse_device(ps_device, "ps_device")
    worker_spec = _parse_device(worker_device, "worker_device") or DeviceSpec()
    task_ids = None
    if cluster is not None:
        jobs = _cluster_jobs(cluster)
        ps_job = ps_spec.job if ps_spec is not None else None
        tasks = jobs.get(ps_job) if ps_job is not None else None
        if not tasks:
            return None
        ps_tasks = len(tasks)
        ids = sorted(tasks)
        # TensorFlow counts the tasks and hands out 0..n-1; a sparse job ({1: ..., 3: ...})
        # would then get variables on tasks that do not exist, so map indices to its ids.
        if ids != list(range(ps_tasks)):
            task_ids = ids
    elif isinstance(ps_tasks, bool) or not isinstance(ps_tasks, numbers.Integral):
        raise TypeError(f"replica_device_setter: ps_tasks must be an integer, got {ps_tasks!r}")
    elif ps_tasks < 0:
        raise ValueError(f"replica_device_setter: ps_tasks must be non-negative, got {ps_tasks}")
    if ps_tasks == 0:
        return None

    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    elif isinstance(ps_ops, (str, bytes)) or not all(isinstance(t, str) for t in ps_ops):
        raise TypeError(f"replica_device_setter: ps_ops must be a list of op type names, "
                        f"got {ps_ops!r}")

    if not merge_devices:
        _log.warning("DEPRECATION: It is recommended to set merge_devices=true in "
                     "replica_device_setter")
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(int(ps_tasks))
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    chooser = _ReplicaDeviceChooser(int(ps_tasks), ps_spec, worker_spec, bool(merge_devices),
                                    ps_ops, ps_strategy, task_ids)
    return chooser.device_function


# -- helpers -------------------------------------------------------------------------------------
def _parse_device(device: DeviceLike, arg: str) -> Optional[DeviceSpec]:
    """The DeviceSpec of a ps/worker device argument; None for None or ''."""
    if not device:
        return None
    if not isinstance(device, (str, DeviceSpec)):
        raise TypeError(f"replica_device_setter: {arg} must be a device string or DeviceSpec, "
                        f"got {device!r}")
    try:
        return as_spec(device).copy()
    except ValueError as e:
        raise ValueError(f"replica_device_setter: bad {arg}: {e}") from None


def _str(spec: Optional[DeviceSpec]) -> str:
    return spec.to_string() if spec is not None else ""


_CLUSTER_TYPE_ERROR = ("`cluster` must be a dictionary mapping one or more job names to lists of "
                       "network addresses, or a `ClusterDef` protocol buffer")


def _cluster_jobs(cluster) -> Dict[str, Dict[int, str]]:
    """job name -> {task index: address} for a ClusterSpec, dict or ClusterDef."""
    if hasattr(cluster, "as_dict") and callable(cluster.as_dict):
        cluster = cluster.as_dict()
    elif not isinstance(cluster, dict):
        jobs = getattr(cluster, "job", None)  # a ClusterDef: repeated JobDef{name, tasks}
        if jobs is None or isinstance(cluster, (str, bytes)):
            raise TypeError(f"{_CLUSTER_TYPE_ERROR}, got {cluster!r}")
        return {job.name: {int(i): a for i, a in dict(job.tasks).items()} for job in jobs}
    out: Dict[str, Dict[int, str]] = {}
    for job, tasks in cluster.items():
        if not isinstance(job, str):
            raise TypeError(f"{_CLUSTER_TYPE_ERROR}; got job name {job!r}")
        if tasks is None:
            continue
        if isinstance(tasks, dict):
            if not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) and i >= 0
                       for i in tasks):
                raise TypeError(f"The tasks for job {job!r} must be a list or a dictionary "
                                "from integers to addresses.")
            out[job] = {int(i): a for i, a in tasks.items()}
        elif isinstance(tasks, (list, tuple)):
            out[job] = dict(enumerate(tasks))
        else:
            raise TypeError(f"The tasks for job {job!r} must be a list or a dictionary from "
                            "integers to addresses.")
    return out
