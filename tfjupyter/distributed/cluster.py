"""ClusterSpec: the jobs of a cluster and the network address of each of their tasks; and the
one rule for whether a host or a task's address is this machine."""
from __future__ import annotations

import ipaddress
import socket
from typing import Dict, FrozenSet, List, Mapping, Optional, Union

from ..framework.device import _JOB_RE

__all__ = ["ClusterSpec", "address_host", "is_loopback", "is_loopback_host", "is_this_host"]

_LOOPBACK_NAMES = frozenset(["localhost", "ip6-localhost", "ip6-loopback"])
_own_names: Optional[FrozenSet[str]] = None


def address_host(address: str) -> str:
    """The host of a task address: 'gpu1:2222' -> 'gpu1', '[::1]:2222' -> '::1'."""
    return address.rpartition(":")[0].strip("[]")


def is_loopback_host(host: str, resolve: bool = False) -> bool:
    """Whether ``host`` is reached over this machine's loopback: a loopback name, or an address
    in 127.0.0.0/8 or ::1. With ``resolve``, also a name that resolves to one (asks DNS)."""
    host = host.strip("[]")
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    if not resolve:
        return False
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def is_loopback(address: str) -> bool:
    """Whether a task address ('host:port') is on this machine's loopback."""
    return is_loopback_host(address_host(address))


def is_this_host(host: str) -> bool:
    """Whether ``host``, as a task, a kernel or an address names it, is this machine: a loopback
    name or address, or this machine's own name (short or fully qualified)."""
    global _own_names
    if is_loopback_host(host):
        return True
    if _own_names is None:   # getfqdn may ask DNS: once per process
        _own_names = frozenset([socket.gethostname(), socket.getfqdn()])
    return host.strip("[]") in _own_names


class ClusterSpec:
    """``ClusterSpec({"ps": ["host0:2222"], "worker": ["host1:2222", "host2:2222"]})``.

    A job's tasks are a list (indices 0..n-1) or a dict ``{index: address}`` (sparse).
    """

    def __init__(self, cluster: Union[Mapping, "ClusterSpec", None]):
        if isinstance(cluster, ClusterSpec):
            self._jobs = {job: dict(tasks) for job, tasks in cluster._jobs.items()}
            return
        if cluster is None:
            cluster = {}
        if not isinstance(cluster, Mapping):
            raise TypeError("ClusterSpec must be built from a dict of job name -> list or dict of "
                            f"task addresses, or a ClusterSpec; got {type(cluster).__name__}")
        self._jobs: Dict[str, Dict[int, str]] = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str) or not _JOB_RE.match(job):
                raise ValueError(f"ClusterSpec: job name {job!r} is not valid (letters, digits "
                                 "and underscores, starting with a letter)")
            if isinstance(tasks, Mapping):
                items = list(tasks.items())
            elif isinstance(tasks, (list, tuple)):
                items = list(enumerate(tasks))
            else:
                raise TypeError(f"ClusterSpec: tasks of job {job!r} must be a list or a dict of "
                                f"index -> address, got {type(tasks).__name__}")
            table: Dict[int, str] = {}
            for index, address in items:
                if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                    raise ValueError(f"ClusterSpec: task index {index!r} of job {job!r} must be "
                                     "a non-negative integer")
                table[index] = _check_address(job, index, address)
            self._jobs[job] = dict(sorted(table.items()))
        seen: Dict[str, str] = {}
        for job, tasks in self._jobs.items():
            for index, address in tasks.items():
                where = f"/job:{job}/task:{index}"
                if address in seen:
                    raise ValueError(f"ClusterSpec: {where} and {seen[address]} have the same "
                                     f"address {address!r}")
                seen[address] = where

    # -- TensorFlow's API ----------------------------------------------------------------------------
    @property
    def jobs(self) -> List[str]:
        return list(self._jobs)

    def as_dict(self) -> Dict[str, Union[List[str], Dict[int, str]]]:
        """Dense jobs as lists, sparse ones as {index: address}, as TensorFlow returns them."""
        out: Dict[str, Union[List[str], Dict[int, str]]] = {}
        for job, tasks in self._jobs.items():
            if list(tasks) == list(range(len(tasks))):
                out[job] = list(tasks.values())
            else:
                out[job] = dict(tasks)
        return out

    def num_tasks(self, job_name: str) -> int:
        return len(self._tasks(job_name))

    def task_indices(self, job_name: str) -> List[int]:
        return list(self._tasks(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        tasks = self._tasks(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index} in job {job_name!r}; its tasks are "
                             f"{list(tasks)}") from None

    def job_tasks(self, job_name: str) -> List[Optional[str]]:
        """Addresses indexed by task (None where a sparse job has no such task)."""
        tasks = self._tasks(job_name)
        if not tasks:
            return []
        return [tasks.get(i) for i in range(max(tasks) + 1)]

    def tasks(self):
        """(job, index, address) for every task, jobs in order of definition."""
        for job, tasks in self._jobs.items():
            for index, address in tasks.items():
                yield job, index, address

    def _tasks(self, job_name: str) -> Dict[int, str]:
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}; jobs are "
                             f"{', '.join(self._jobs) or 'none'}") from None

    def __eq__(self, other) -> bool:
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __repr__(self) -> str:
        return f"ClusterSpec({self.as_dict()!r})"


def _check_address(job: str, index: int, address) -> str:
    if not isinstance(address, str):
        raise TypeError(f"ClusterSpec: address of /job:{job}/task:{index} must be a string "
                        f"'host:port', got {address!r}")
    address = address.strip()
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"ClusterSpec: address {address!r} of /job:{job}/task:{index} is not "
                         "of the form 'host:port'")
    return address
