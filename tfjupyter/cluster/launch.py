"""Where each task's engine starts, and with what: the plan handed to ipyparallel's launchers.

One engine set per task (``start_engines(1, "worker-1", environment=...)``), so that each task
gets its own environment (its role, its ``CUDA_VISIBLE_DEVICES``) and, with the ssh launcher, its
own host. Hosts are dealt round-robin: ps tasks from the first host on, workers likewise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ..distributed.cluster import is_loopback_host
from .engine import ROLE_ENV

__all__ = ["ClusterError", "TaskPlan", "plan_tasks", "launcher_class"]


class ClusterError(RuntimeError):
    """A cluster could not be started, attached, or used; the message names the task or input."""


@dataclass
class TaskPlan:
    job: str
    index: int
    host: Optional[str] = None            # ssh location ("user@host:port" allowed); None: local
    environment: Dict[str, str] = field(default_factory=dict)
    advertise_host: Optional[str] = None  # how other tasks reach it; None: the engine's own name
    bind_host: str = "0.0.0.0"

    @property
    def name(self) -> str:
        return f"{self.job}:{self.index}"

    @property
    def engine_set_id(self) -> str:
        return f"{self.job}-{self.index}"


def launcher_class(name: str):
    """ipyparallel's engine-set launcher for a name (local, ssh, mpi, slurm, pbs, lsf, ...)."""
    from ipyparallel.cluster.launcher import find_launcher_class
    if not isinstance(name, str) or not name:
        raise ClusterError(f"engines must name an ipyparallel launcher, got {name!r}")
    try:
        return find_launcher_class(name, "engine")
    except Exception:
        raise ClusterError(f"unknown engine launcher {name!r}; ipyparallel's launchers are: "
                           f"{', '.join(known_launchers())}") from None


def known_launchers() -> List[str]:
    from importlib.metadata import entry_points
    return sorted({ep.name for ep in entry_points(group="ipyparallel.engine_launchers")})


def _bare_host(location: str) -> str:
    """'user@gpu1:2222' -> 'gpu1' (the ssh port is not the task's)."""
    host = location.rpartition("@")[2]
    if host.startswith("["):
        return host[1:host.index("]")]
    return host.partition(":")[0]


def plan_tasks(ps: int, workers: int, engines: str, hosts: Sequence[str] = (),
               gpus_per_worker: int = 0, environment: Optional[Dict[str, str]] = None
               ) -> List[TaskPlan]:
    for what, n in (("ps", ps), ("workers", workers), ("gpus_per_worker", gpus_per_worker)):
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ClusterError(f"--{what.replace('_', '-')} must be a non-negative integer, "
                               f"got {n!r}")
    if workers < 1:
        raise ClusterError(f"a cluster needs at least one worker task (got --workers {workers})")
    remote = engines.lower() == "ssh"
    hosts = [h.strip() for h in hosts if h and h.strip()]
    if remote and not hosts:
        raise ClusterError("the ssh launcher needs --hosts (host names, user@host or host:port)")
    if hosts and not remote:
        raise ClusterError(f"--hosts is for the ssh launcher; the {engines!r} launcher places "
                           "engines itself (configure it in the ipyparallel profile)")
    plans: List[TaskPlan] = []
    gpus_used: Dict[str, int] = {}
    for job, count in (("ps", ps), ("worker", workers)):
        for index in range(count):
            env = dict(environment or {})
            env[ROLE_ENV] = f"{job}:{index}"
            plan = TaskPlan(job, index, environment=env)
            if remote:
                plan.host = hosts[index % len(hosts)]
                plan.advertise_host = _bare_host(plan.host)
            elif engines.lower() == "local":
                plan.advertise_host = "127.0.0.1"
            if plan.advertise_host and is_loopback_host(plan.advertise_host, resolve=True):
                plan.bind_host = "127.0.0.1"  # nothing off this machine needs to reach it
            if gpus_per_worker:
                key = plan.host or ""
                if job == "worker":
                    first = gpus_used.get(key, 0)
                    gpus_used[key] = first + gpus_per_worker
                    env["CUDA_VISIBLE_DEVICES"] = ",".join(
                        str(g) for g in range(first, first + gpus_per_worker))
                else:
                    env["CUDA_VISIBLE_DEVICES"] = ""  # parameters live in host memory
            plans.append(plan)
    return plans
