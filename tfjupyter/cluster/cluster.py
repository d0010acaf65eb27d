"""``Cluster``: ps and worker tasks on ipyparallel engines, driven from a notebook or a script.

ipyparallel starts the processes (its launchers: local, ssh, mpi, slurm, pbs, lsf, ...) and
carries code to them; each engine then serves one task of the cluster over tfjupyter's gRPC
runtime, which carries tensors and telemetry. The engine id -> task table is kept here, since
ipyparallel does not tag engines: each engine set is started with its task in its environment.
"""
from __future__ import annotations

import atexit
import logging
import os
import secrets
import signal
import socket
import textwrap
import time
import weakref
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Union

from ..distributed.cluster import is_this_host
from . import engine as _engine
from . import processes, registry
from .launch import ClusterError, TaskPlan, launcher_class, plan_tasks
from .runs import Run, TaskError

__all__ = ["Cluster", "Task"]

_log = logging.getLogger("tfjupyter.cluster")

_TASK_ENV_PASSTHROUGH = ("TFJUPYTER_TLS_CERT", "TFJUPYTER_TLS_KEY", "TFJUPYTER_TLS_CA")
STATUS_FIRST_REPLY_WAIT_S = 3.0   # status() on a new watcher waits this long at most for the
                                  # tasks' first replies

STOPPED_FROM_PANEL = ("this cluster was stopped from JupyterLab's cluster panel; "
                      "start a new one")


@dataclass
class Task:
    """One task of the cluster and the engine that serves it."""
    job: str
    index: int
    engine_id: int
    host: str = ""
    pid: int = 0
    address: str = ""
    devices: List[dict] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.job}:{self.index}"

    @property
    def device_name(self) -> str:
        return f"/job:{self.job}/replica:0/task:{self.index}"


class Cluster:
    """A TensorFlow-style cluster whose tasks are ipyparallel engines.

    ``Cluster(ps=1, workers=2).start()`` starts a controller and one engine per task with
    ipyparallel's ``engines`` launcher, then a ``tf.train.Server`` in each. ``run`` executes code
    on tasks (a ``%%tf_worker`` cell is ``run(cell, job="worker")``), ``status()`` is a table,
    ``watch()`` streams telemetry, ``stop()`` ends every process it started.

    Remote engines: ``engines="ssh", hosts=["gpu1", "gpu2"]`` (``launcher_config`` passes traits
    to ipyparallel's launcher, e.g. ``{"ssh_args": [...], "remote_python": "..."}``); batch
    launchers (``"slurm"``, ``"pbs"``, ``"lsf"``, ``"mpi"``) take their settings from the
    ipyparallel ``profile``.
    """

    def __init__(self, ps: int = 1, workers: int = 2, engines: str = "local",
                 hosts: Sequence[str] = (), gpus_per_worker: int = 0,
                 profile: Optional[str] = None, controller_ip: Optional[str] = None,
                 controller_location: Optional[str] = None,
                 launcher_config: Optional[Dict] = None, environment: Optional[Dict] = None,
                 start_timeout: float = 120.0, log_level: int = 40):
        launcher_class(engines)  # fails here, naming the known launchers
        env = {k: os.environ[k] for k in _TASK_ENV_PASSTHROUGH if os.environ.get(k)}
        env.update(environment or {})
        self._plans: List[TaskPlan] = plan_tasks(ps, workers, engines, hosts, gpus_per_worker, env)
        self.engines = engines
        self.profile = profile
        self._controller_ip = controller_ip
        self._controller_location = controller_location
        self._launcher_config = dict(launcher_config or {})
        self.start_timeout = start_timeout
        self._log_level = log_level
        self.token = secrets.token_hex(32)
        self.id = secrets.token_hex(8)    # its name in the registry and JupyterLab's panel
        self._registry_dir: Optional[str] = None   # where its entry is, once registered
        self._ipp = None                  # the ipyparallel.Cluster we started (None if attached)
        self.client = None                # ipyparallel.Client
        self.tasks: List[Task] = []
        self.spec = None                  # tf.train.ClusterSpec once started
        self._runs: List[Run] = []
        self._watcher = None
        self._owns_engines = True
        self._stopped = False
        self._stopped_message = "this cluster was stopped; start a new one"
        self.start_time: Optional[float] = None

    @property
    def ipyparallel_cluster(self):
        """The ``ipyparallel.Cluster`` this cluster started (its controller, engine sets and
        cluster file); None before start() and when attached to engines started by others."""
        return self._ipp

    # -- starting ------------------------------------------------------------------------------
    @classmethod
    def attach(cls, profile: str = "default", ps: Sequence[int] = (0,),
               workers: Sequence[int] = (1,), cluster_id: str = "", url_file: Optional[str] = None,
               timeout: float = 30.0) -> "Cluster":
        """Gives roles to the engines of a running ipyparallel cluster (engine ids per job)."""
        import ipyparallel

        ps, workers = list(ps), list(workers)
        if not workers:
            raise ClusterError("attach needs at least one worker engine (--workers 1,2)")
        clash = set(ps) & set(workers)
        if clash or len(set(ps)) != len(ps) or len(set(workers)) != len(workers):
            raise ClusterError(f"an engine can serve one task only; engine ids given twice: "
                               f"{sorted(clash) or 'within a job'}")
        self = cls(ps=len(ps), workers=len(workers))
        self._owns_engines = False
        self.profile = profile
        try:
            kwargs = {"url_file": url_file} if url_file else {"profile": profile,
                                                             "cluster_id": cluster_id}
            self.client = ipyparallel.Client(timeout=timeout, **kwargs)
        except Exception as e:
            raise ClusterError(f"cannot connect to the ipyparallel cluster of profile {profile!r}: "
                               f"{type(e).__name__}: {e}") from None
        missing = [i for i in ps + workers if i not in self.client.ids]
        if missing:
            raise ClusterError(f"engine ids {missing} are not in the ipyparallel cluster of "
                               f"profile {profile!r}; its engines are {self.client.ids}")
        # Engines all on this host talk over loopback; otherwise each is reached by its name.
        hosts = self.client[ps + workers].apply_sync(socket.gethostname)
        here = all(is_this_host(host) for host in hosts)
        for plan in self._plans:
            plan.advertise_host, plan.bind_host = ("127.0.0.1", "127.0.0.1") if here else \
                (None, "0.0.0.0")
        engine_ids = dict(zip((p.name for p in self._plans), ps + workers))
        self._bootstrap(engine_ids)
        return self

    def start(self) -> "Cluster":
        """Starts the controller, one engine per task, and every task's server."""
        import ipyparallel

        if self.client is not None:
            return self
        t0 = time.monotonic()
        kwargs = dict(n=0, engines=self.engines, log_level=self._log_level,
                      engine_timeout=self.start_timeout)
        if self.profile:
            kwargs["profile"] = self.profile
        if self._controller_ip:
            kwargs["controller_ip"] = self._controller_ip
        elif all(p.bind_host == "127.0.0.1" for p in self._plans):
            kwargs["controller_ip"] = "127.0.0.1"  # local engines, or ssh to this host
        else:
            kwargs["controller_ip"] = "*"  # engines on other hosts (ssh, batch) must reach it
        if self._controller_location:
            kwargs["controller_location"] = self._controller_location
        self._ipp = ipyparallel.Cluster(**kwargs)
        _live_clusters.add(self)
        try:
            processes.start_controller(self._ipp, self.engines)
            for plan in self._plans:
                processes.start_engine(self._ipp, plan, self.engines, self._launcher_config)
            self.client = self._ipp.connect_client_sync()
            processes.wait_for_engines(self._ipp, self.client, len(self._plans), self.engines,
                                       self.start_timeout, started=t0)
            self._bootstrap(self._engine_roles())
        except BaseException:
            self.stop()
            raise
        self.start_time = time.monotonic() - t0
        return self

    def _engine_roles(self) -> Dict[str, int]:
        """task name -> engine id, from the role each engine found in its environment."""
        ids = list(self.client.ids)
        view = self.client[ids]
        self._check_tfjupyter(ids)
        roles = view.apply_sync(_engine.role)
        table = {}
        for eid, role in zip(ids, roles):
            if role in table or role not in {p.name for p in self._plans}:
                raise ClusterError(f"engine {eid} has role {role!r}, which is not a task of this "
                                   "cluster or is served twice (is another cluster using this "
                                   "ipyparallel profile?)")
            table[role] = eid
        return table

    def _check_tfjupyter(self, ids: List[int]) -> None:
        """Engines whose Python lacks tfjupyter fail here, by name, not in a pickling error."""
        probe = self.client[ids].execute(
            "import sys, socket\n_tfj_python = (sys.executable, socket.gethostname())\n"
            "import tfjupyter.cluster.engine", block=False)
        probe.wait(self.start_timeout)
        problems = []
        for eid, value in zip(ids, probe.get(return_exceptions=True)):
            if isinstance(value, BaseException):
                problems.append(f"engine {eid}: {getattr(value, 'ename', type(value).__name__)}: "
                                f"{getattr(value, 'evalue', value)}")
        if problems:
            where = self.client[ids].pull("_tfj_python", block=True)
            pythons = sorted({f"{host}: {exe}" for exe, host in where})
            raise ClusterError("tfjupyter cannot be imported on the engines; install it in the "
                               f"Python the engines run ({'; '.join(pythons)}):\n  "
                               + "\n  ".join(problems))

    def _bootstrap(self, engine_ids: Dict[str, int]) -> None:
        """Binds every task's server, assembles the ClusterSpec from the ports held, serves."""
        from ..distributed.cluster import ClusterSpec

        if not self._owns_engines:
            self._check_tfjupyter(list(engine_ids.values()))
        binds = {}
        for plan in self._plans:
            eid = engine_ids[plan.name]
            binds[plan.name] = self.client[eid].apply_async(
                _engine.bind, plan.job, plan.index, plan.advertise_host, plan.bind_host, self.token)
        tasks, jobs = [], {}
        for plan in self._plans:
            info = self._task_result(plan.name, binds[plan.name], "binding its server")
            tasks.append(Task(plan.job, plan.index, engine_ids[plan.name], info["hostname"],
                              info["pid"], info["address"], info["devices"]))
            jobs.setdefault(plan.job, {})[plan.index] = info["address"]
        self.tasks = tasks
        self.spec = ClusterSpec(jobs)
        serving = {t.name: self.client[t.engine_id].apply_async(_engine.serve, self.spec.as_dict())
                   for t in tasks}
        for name, ar in serving.items():
            self._task_result(name, ar, "starting its server")
        view = self.client[[t.engine_id for t in tasks]]
        view.execute("import tfjupyter.cluster.engine as _tfj_engine\n"
                     "globals().update(_tfj_engine.namespace())\ndel _tfj_engine", block=True)
        _serving_clusters.add(self)
        self._register()

    def _register(self) -> None:
        """Records the cluster for JupyterLab's cluster panel (the server extension)."""
        try:
            directory = registry.registry_dir()
            registry.register(self, directory)
            self._registry_dir = directory
        except Exception as e:  # the cluster works without the panel
            _log.warning("cannot record the cluster in the tfjupyter cluster registry "
                         "(JupyterLab's cluster panel will not show it): %s", e)

    def _task_result(self, task: str, async_result, doing: str):
        try:
            return async_result.get(self.start_timeout)
        except Exception as e:
            raise ClusterError(f"/job:{task.replace(':', '/task:')} failed {doing}: "
                               f"{getattr(e, 'ename', type(e).__name__)}: "
                               f"{getattr(e, 'evalue', e)}") from None

    # -- using ---------------------------------------------------------------------------------
    def task(self, name: str) -> Task:
        for t in self.tasks:
            if t.name == name:
                return t
        raise ClusterError(f"no task {name!r} in this cluster; tasks are "
                           f"{', '.join(t.name for t in self.tasks)}")

    def select(self, job: Optional[str] = "worker", tasks: Optional[Sequence[int]] = None
               ) -> List[Task]:
        """The tasks of ``job`` (every job if None), optionally only those indices."""
        self._check_running()
        if job is not None and job not in {t.job for t in self.tasks}:
            raise ClusterError(f"no job {job!r} in this cluster; jobs are "
                               f"{', '.join(sorted({t.job for t in self.tasks}))}")
        chosen = [t for t in self.tasks if job is None or t.job == job]
        if tasks is not None:
            indices = {t.index for t in chosen}
            bad = [i for i in tasks if i not in indices]
            if bad:
                raise ClusterError(f"--tasks {','.join(map(str, bad))}: job {job!r} has tasks "
                                   f"{', '.join(str(i) for i in sorted(indices))}")
            chosen = [t for t in chosen if t.index in set(tasks)]
        return chosen

    def run(self, code: Union[str, Callable], *args, job: Optional[str] = "worker",
            tasks: Optional[Sequence[int]] = None, block: bool = True,
            timeout: Optional[float] = None, **kwargs):
        """Runs a cell's code (a string) or a function on tasks.

        Output appears as it is printed, each line prefixed with its task (``[worker:1] ...``).
        ``block=True`` returns ``{task: value}`` (for code, ipyparallel's ``ExecuteReply``,
        whose repr shows the value of the cell's last expression) and raises ``TaskError``
        naming every task that failed; ``block=False`` returns the ``Run`` at once (its output
        and errors come out at ``wait()``).
        """
        chosen = self.select(job, tasks)
        view = self.client[[t.engine_id for t in chosen]]
        if isinstance(code, str):
            code = textwrap.dedent(code)
            try:
                compile(code, f"<{job or 'cluster'} cell>", "exec")
            except SyntaxError as e:
                raise SyntaxError(f"the cell for the {job or 'cluster'} tasks does not compile: "
                                  f"{e.msg} (line {e.lineno})") from None
            if args or kwargs:
                raise TypeError("arguments are for functions; code runs in each task's namespace")
            async_result = view.execute(code, block=False, silent=False)
            what = f"the {job or 'cluster'} cell"
        elif callable(code):
            async_result = view.apply_async(code, *args, **kwargs)
            what = getattr(code, "__name__", "the function")
        else:
            raise TypeError(f"run() takes code (str) or a function, got {type(code).__name__}")
        run = Run(what, async_result, [t.name for t in chosen])
        self._runs = [r for r in self._runs if not r.reported] + [run]
        if not block:
            return run
        try:
            return run.result(timeout)
        except KeyboardInterrupt:
            self.interrupt(tasks=run.task_names)
            run.stream(timeout=10)
            raise
        finally:
            if run.done():
                self._runs.remove(run)

    def wait(self, timeout: Optional[float] = None) -> Dict[str, object]:
        """Waits for every ``block=False`` run whose result was not taken (``Run.result``):
        shows their output, raises their errors."""
        results, failures = {}, {}
        for run in list(self._runs):
            if not run.reported:
                try:
                    results.update(run.result(timeout))
                except TaskError as e:
                    failures.update(e.failures)
            self._runs.remove(run)
        if failures:
            raise TaskError("code run on the cluster", failures)
        return results

    def interrupt(self, job: Optional[str] = None, tasks: Optional[Sequence[str]] = None) -> None:
        """Sends SIGINT to the engines of ``job``, of the named ``tasks`` ("worker:1"), or of
        every task (KeyboardInterrupt in the code they are running)."""
        chosen = [self.task(name) for name in tasks] if tasks is not None else \
            self.select(job) if job else self.tasks
        ids = [t.engine_id for t in chosen if t.engine_id in self.client.ids]
        if ids:
            self.client.send_signal(signal.SIGINT, targets=ids, block=True)

    def busy_tasks(self) -> set:
        busy = set()
        for run in self._runs:
            busy.update(run.pending_tasks())
        return busy

    # -- watching ------------------------------------------------------------------------------
    def watch(self, **kwargs):
        """A telemetry watcher over this cluster's gRPC plane (see distributed.telemetry.watch)."""
        from ..distributed.telemetry import watch
        self._check_running()
        return watch(self.spec, token=self.token, **kwargs)

    def _status_watcher(self):
        if self._watcher is None:
            self._watcher = self.watch()
            await_first_replies([self._watcher], STATUS_FIRST_REPLY_WAIT_S)
        return self._watcher

    def status(self):
        """The status table: task, engine, host, pid, address, devices, state, step, rates."""
        from .status import StatusTable
        self._check_running()
        snapshot = self._status_watcher().snapshot()
        return StatusTable.of(self, snapshot)

    # -- stopping ------------------------------------------------------------------------------
    def _check_running(self) -> None:
        if not self._stopped and self._stopped_from_panel():
            self._release_after_panel_stop()
        if self._stopped:
            raise ClusterError(self._stopped_message)
        if self.client is None:
            raise ClusterError("this cluster is not started; call start() "
                               "(or %tf_cluster start)")

    def _stopped_from_panel(self) -> bool:
        """Whether the server extension stopped our processes (the registry entry says so)."""
        if self._registry_dir is None:
            return False
        try:
            entry = registry.read(self.id, self._registry_dir)
        except Exception as e:
            _log.debug("cannot read the cluster registry: %s", e)
            return False
        return entry is not None and entry.get("stopped_by") == "panel"

    def _release_after_panel_stop(self) -> None:
        """The panel stopped the controller and engines with ipyparallel: what is left here is
        our side of them (client, watcher, ipyparallel's own handle), let go of quietly."""
        self._stopped = True
        self._stopped_message = STOPPED_FROM_PANEL
        _live_clusters.discard(self)
        _serving_clusters.discard(self)
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        if self.client is not None:
            try:
                self.client.close()
            except Exception as e:
                _log.debug("closing the ipyparallel client of a stopped cluster: %s", e)
        if self._ipp is not None:
            # Else ipyparallel would stop it again at exit or when collected, and warn that the
            # processes it knew are gone.
            self._ipp.shutdown_atexit = False
            # The panel's stop may have failed half-way, or be under way still: whatever of the
            # cluster runs on this machine must not outlive it unlisted. (Nothing to do, and no
            # wait, when they are gone.)
            processes.reap(processes.local_processes(self._ipp, self._task_pids_here()))
        self._runs.clear()
        self._unregister()

    def _unregister(self) -> None:
        if self._registry_dir is None:
            return
        try:
            registry.remove(self.id, self._registry_dir)
        except Exception as e:
            _log.warning("cannot remove the cluster from the tfjupyter cluster registry: %s", e)
        self._registry_dir = None

    def stop(self) -> None:
        """Stops the servers and every engine and controller this cluster started."""
        if self._stopped:
            return
        if self._stopped_from_panel():
            self._release_after_panel_stop()
            return
        self._stopped = True
        if self._registry_dir is not None:
            try:  # the panel shows it stopping until the entry goes, at the end
                registry.mark_stopped(self.id, "kernel", self._registry_dir)
            except Exception as e:
                _log.debug("cannot mark the cluster stopped in the registry: %s", e)
        _live_clusters.discard(self)
        _serving_clusters.discard(self)
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        if self.client is not None and self.busy_tasks():
            try:
                self.interrupt()
            except Exception as e:
                _log.warning("interrupting the running cells failed: %s", e)
        if self.client is not None and not self._owns_engines and self.tasks:
            try:
                self.client[[t.engine_id for t in self.tasks]].apply_sync(_engine.stop)
            except Exception as e:
                _log.warning("stopping the task servers failed: %s", e)
        if self._ipp is not None:
            try:
                processes.stop_ipyparallel(self._ipp, self.client, self._task_pids_here())
            except Exception as e:
                _log.warning("ipyparallel could not stop the cluster cleanly: %s", e)
        if self.client is not None:   # attached (stop_ipyparallel closed the client of ours)
            self.client.close()
        self._runs.clear()
        # Last: if stopping failed half-way, the panel still shows what is left (stopping).
        self._unregister()

    def _task_pids_here(self) -> List[int]:
        """The pids of the engines serving this cluster's tasks on this machine."""
        return [t.pid for t in self.tasks if is_this_host(t.host)]

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "running" if self.client else "not started"
        jobs = ", ".join(f"{job}: {n}" for job, n in _count_jobs(self._plans).items())
        return f"<tfjupyter Cluster ({jobs}) on {self.engines!r} engines, {state}>"


def _count_jobs(plans) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for p in plans:
        counts[p.job] = counts.get(p.job, 0) + 1
    return counts


def await_first_replies(watchers, timeout: float) -> None:
    """Waits, at most ``timeout`` s, until every task of the telemetry ``watchers`` has
    answered or refused, so that a status read from a new watcher is not all "starting"."""
    deadline = time.monotonic() + timeout
    while watchers and time.monotonic() < deadline:
        if not any(s.state == "unknown" and not s.error
                   for w in watchers for s in w.snapshot().values()):
            return
        time.sleep(0.05)


_live_clusters: "weakref.WeakSet[Cluster]" = weakref.WeakSet()       # started here: stop at exit
_serving_clusters: "weakref.WeakSet[Cluster]" = weakref.WeakSet()    # started or attached


def serving_clusters() -> List[Cluster]:
    """The clusters of this process whose servers are up (started or attached, not stopped):
    what a kernel-wide dashboard follows."""
    return [c for c in list(_serving_clusters) if not c._stopped]


@atexit.register
def _stop_live_clusters() -> None:
    for cluster in list(_live_clusters):
        try:
            cluster.stop()
        except Exception:
            pass
