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
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Union

from ..distributed.cluster import is_this_host
from . import engine as _engine
from . import processes, registry
from .launch import ClusterError, TaskPlan, launcher_class, plan_tasks
from .lease import LEASE_ENV, LEASE_S
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
    restarts: int = 0      # times the cluster restarted it (Cluster(restart=True))
    note: str = ""         # why it is down, when the cluster says more than telemetry can

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

    ``detach=True``: the cluster outlives this process on purpose (it is not stopped at exit
    and does not watch its owner); ``Cluster.attach(cluster=its id)`` takes it over, from
    another kernel too. Else its processes exit when this one dies without stopping them.

    ``restart=True``: a task whose engine dies is started again, on the same address and port
    (recovery.py: a worker reruns its cell, a ps comes back empty), at most ``max_restarts``
    times per task in ``restart_window_s``. ``scale(workers=N)`` adds or removes workers.
    """

    def __init__(self, ps: int = 1, workers: int = 2, engines: str = "local",
                 hosts: Sequence[str] = (), gpus_per_worker: int = 0,
                 profile: Optional[str] = None, controller_ip: Optional[str] = None,
                 controller_location: Optional[str] = None,
                 launcher_config: Optional[Dict] = None, environment: Optional[Dict] = None,
                 start_timeout: float = 120.0, log_level: int = 40, restart: bool = False,
                 max_restarts: int = 3, restart_window_s: float = 600.0, detach: bool = False):
        launcher_class(engines)  # fails here, naming the known launchers
        env = {k: os.environ[k] for k in _TASK_ENV_PASSTHROUGH if os.environ.get(k)}
        env.update(environment or {})
        # Unless detached, the processes end when this one dies without stopping them (lease.py).
        self.detach = detach
        if not detach:
            env[LEASE_ENV] = str(LEASE_S)
        self._plans: List[TaskPlan] = plan_tasks(ps, workers, engines, hosts, gpus_per_worker, env)
        # What scale() plans new workers from, as start did.
        self._planning = dict(engines=engines, hosts=list(hosts),
                              gpus_per_worker=gpus_per_worker, environment=env)
        if restart:
            from .recovery import Supervisor
            self.supervisor: Optional["Supervisor"] = Supervisor(self, max_restarts,
                                                                 restart_window_s)
        else:
            self.supervisor = None
        # Held while engines come and go (a restart's thread, scale, stop).
        self._engines_lock = threading.RLock()
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
               timeout: float = 30.0, cluster: str = "") -> "Cluster":
        """Gives roles to the engines of a running ipyparallel cluster (engine ids per job).

        ``cluster``: instead, the id of a tfjupyter cluster started with ``detach=True`` (from
        this kernel or another), taken over with its tasks and token as they are."""
        import ipyparallel

        if cluster:
            return cls._reattach(cluster, timeout)
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

    @classmethod
    def _reattach(cls, cluster_id: str, timeout: float) -> "Cluster":
        """Takes over a detached cluster from its registry entry (this user's alone: 0600),
        which holds its token, its tasks' roles and addresses and ipyparallel's cluster file."""
        import ipyparallel
        from ..distributed.cluster import ClusterSpec

        try:
            entry = registry.read(cluster_id)
        except ValueError as e:
            raise ClusterError(str(e)) from None
        if entry is None:
            raise ClusterError(f"no cluster {cluster_id!r} in the tfjupyter cluster registry "
                               f"({registry.registry_dir()})")
        if not entry.get("detached") or entry["state"] != "running":
            raise ClusterError(f"cluster {cluster_id} is {entry['state']} and "
                               f"{'detached' if entry.get('detached') else 'not detached'}: "
                               "only a running cluster started with --detach can be reattached")
        try:
            ipp = ipyparallel.Cluster.from_file(entry["cluster_file"], log_level=40)
            ipp.shutdown_atexit = False
            client = ipp.connect_client_sync()
            client.wait_for_engines(len(entry["tasks"]), timeout=timeout)
        except Exception as e:
            raise ClusterError(f"cannot reach the controller of cluster {cluster_id} "
                               f"({entry['cluster_file']}): {type(e).__name__}: {e}") from None
        tasks = [Task(t["job"], t["index"], t["engine_id"], t["host"], t["pid"], t["address"],
                      t["devices"]) for t in entry["tasks"]]
        missing = [t.name for t in tasks if t.engine_id not in client.ids]
        if missing:
            client.close()
            raise ClusterError(f"the engines of {', '.join(missing)} are gone from cluster "
                               f"{cluster_id}; stop it from JupyterLab's cluster panel")
        count = _count_jobs(tasks)
        self = cls(ps=count.get("ps", 0), workers=count.get("worker", 0), detach=True)
        self.engines, self.id, self.token = entry["engines"], entry["id"], entry["token"]
        self._ipp, self.client, self.tasks = ipp, client, tasks
        jobs: Dict[str, Dict[int, str]] = {}
        for t in tasks:
            jobs.setdefault(t.job, {})[t.index] = t.address
        self.spec = ClusterSpec(jobs)
        _serving_clusters.add(self)
        self._register()   # the entry now names this process as its kernel
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
        if self.detach:
            self._ipp.shutdown_atexit = False   # ipyparallel would stop it at exit
        else:
            _live_clusters.add(self)
        try:
            processes.start_controller(self._ipp, self.engines, watch_owner=not self.detach)
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
        view.execute(_engine.NAMESPACE_CODE, block=True)
        _serving_clusters.add(self)
        self._register()
        if self.supervisor is not None:
            self.supervisor.start()

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

    # -- tasks that come and go ---------------------------------------------------------------
    def _start_tasks(self, plans: List[TaskPlan], ports: Dict[str, int]) -> Dict[str, tuple]:
        """New engines for ``plans``, through the launcher that started the cluster, each with
        its task's server bound (``ports``: a task's own port; others get the OS's choice).
        task name -> (engine id, what bind reported). Engines that came up for a failed start
        are shut down."""
        t0 = time.monotonic()
        known = set(self.client.ids)
        for plan in plans:
            processes.forget_engine_set(self._ipp, plan.engine_set_id)
            processes.start_engine(self._ipp, plan, self.engines, self._launcher_config)
        new = processes.wait_for_new_engines(self._ipp, self.client, known, len(plans),
                                             self.engines, self.start_timeout, started=t0)
        roles = dict(zip(self.client[new].apply_sync(_engine.role), new))
        started = {}
        try:
            binds = {p.name: self.client[roles[p.name]].apply_async(
                _engine.bind, p.job, p.index, p.advertise_host, p.bind_host, self.token,
                ports.get(p.name, 0)) for p in plans}
            for plan in plans:
                info = self._task_result(plan.name, binds[plan.name], "binding its server")
                started[plan.name] = (roles[plan.name], info)
        except BaseException:
            self._shut_down_engines(new, plans)
            raise
        return started

    def _shut_down_engines(self, engine_ids: List[int], plans: List[TaskPlan],
                           task_pids: Sequence[int] = ()) -> None:
        """Ends engines of ours that serve no task (any more): they exit, their sets go, and
        nothing of them stays on this machine (``task_pids``: their engines' pids here)."""
        leftovers = processes.local_processes(self._ipp, task_pids,
                                              {p.engine_set_id for p in plans})
        try:
            self.client.shutdown(targets=list(engine_ids), block=False)
        except Exception as e:
            _log.debug("asking engines %s to shut down: %s", engine_ids, e)
        for plan in plans:
            processes.forget_engine_set(self._ipp, plan.engine_set_id)
        processes.reap(leftovers)

    def _serve_tasks(self, new: List[Task]) -> None:
        """Starts the servers of ``new`` tasks on the current spec and defines their names."""
        serving = {t.name: self.client[t.engine_id].apply_async(_engine.serve, self.spec.as_dict())
                   for t in new}
        for name, ar in serving.items():
            self._task_result(name, ar, "starting its server")
        self.client[[t.engine_id for t in new]].execute(_engine.NAMESPACE_CODE, block=True)

    def restart_task(self, name: str) -> Task:
        """Starts a new engine for a task whose engine died: same launcher, plan and role,
        same address and port (so the ClusterSpec every other task holds stays right), its
        server serving the cluster and its names defined. The cells it ran are the caller's
        business (recovery.Supervisor reruns a worker's). Returns the new Task."""
        with self._engines_lock:
            self._check_running()
            old = self.task(name)
            plan = next(p for p in self._plans if p.name == name)
            port = int(old.address.rpartition(":")[2])
            try:
                (engine_id, info), = self._start_tasks([plan], {name: port}).values()
            except ClusterError as e:
                taken = "could not bind" in str(e)
                raise ClusterError(f"cannot restart {name} at {old.address}"
                                   + (f": port {port} is taken by another process, and the "
                                      "ClusterSpec of every task names it" if taken else "")
                                   + f" ({e})") from None
            task = Task(old.job, old.index, engine_id, info["hostname"], info["pid"],
                        info["address"], info["devices"], restarts=old.restarts + 1)
            self._serve_tasks([task])
            self.tasks = [task if t.name == name else t for t in self.tasks]
            if self._registry_dir is not None:
                self._register()   # its new pid and engine
            return task

    def scale(self, workers: int) -> None:
        """Changes the number of worker tasks while cells run.

        New workers start on new engines (hosts dealt round-robin as at start, so the ssh
        launcher puts several workers on a host once there are more workers than hosts), every
        server learns the new ClusterSpec, and each new worker runs the worker cell that is
        running (the last unfinished one). Removing takes the highest-numbered workers: their
        cell is interrupted, their server and engine stop. ``cluster`` and ``num_workers``
        follow in the cells run from then on (a cell that runs keeps the values it read).
        Between-graph training with a fixed count of replicas to aggregate
        (SyncReplicasOptimizer) cannot follow: scaling it is refused.
        """
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ClusterError(f"scale: a cluster needs at least one worker task (got "
                               f"--workers {workers!r})")
        self._check_running()
        if not self._owns_engines:
            raise ClusterError("scale: this cluster was attached to engines started elsewhere; "
                               "start or stop engines with ipyparallel, then attach again")
        with self._engines_lock:
            current = [t for t in self.tasks if t.job == "worker"]
            if workers == len(current):
                return
            if self._sync_replicas_running():
                raise ClusterError(
                    "scale: the running cell trains with SyncReplicasOptimizer, whose "
                    "replicas_to_aggregate and token queue are fixed when its graph is built: "
                    "a changed worker count would leave steps waiting for gradients that never "
                    "come. Interrupt it, scale, and run it again (or train async)")
            if workers > len(current):
                self._add_workers(workers, len(current))
            else:
                self._remove_workers([t for t in current if t.index >= workers])

    def _add_workers(self, workers: int, first: int) -> None:
        from ..distributed.cluster import ClusterSpec
        ps = sum(p.job == "ps" for p in self._plans)
        planning = self._planning
        plans = plan_tasks(ps, workers, planning["engines"], planning["hosts"],
                           planning["gpus_per_worker"], planning["environment"])[ps + first:]
        started = self._start_tasks(plans, {})
        new = [Task(p.job, p.index, started[p.name][0], started[p.name][1]["hostname"],
                    started[p.name][1]["pid"], started[p.name][1]["address"],
                    started[p.name][1]["devices"]) for p in plans]
        jobs = self.spec.as_dict()
        jobs["worker"] = list(jobs["worker"]) + [t.address for t in new]
        old_tasks, old_spec, self.spec = list(self.tasks), self.spec, ClusterSpec(jobs)
        try:
            self._serve_tasks(new)
        except BaseException:
            self.spec = old_spec
            self._shut_down_engines([t.engine_id for t in new], plans)
            raise
        self._plans += plans
        self.tasks = old_tasks + new
        self._announce_cluster(old_tasks)
        running = self.running_cell("worker")
        if running is not None:
            for task in new:
                running.rerun(task.name, self.client[task.engine_id].execute(
                    running.code, block=False, silent=False),
                    f"added by a scale to {workers} workers; running the cell")

    def _remove_workers(self, leaving: List[Task]) -> None:
        from ..distributed.cluster import ClusterSpec
        names = {t.name for t in leaving}
        runs = [r for r in self._runs if any(r.runs_on(n) for n in names)]
        if runs:
            self.client.send_signal(signal.SIGINT, targets=[t.engine_id for t in leaving],
                                    block=True)
        deadline = time.monotonic() + 30
        while any(r.runs_on(n) for r in runs for n in names) and time.monotonic() < deadline:
            time.sleep(0.1)
        remaining = [t for t in self.tasks if t.name not in names]
        for run in runs:
            for name in names:
                run.remove(name, f"removed by a scale to "
                                 f"{sum(t.job == 'worker' for t in remaining)} workers")
        try:   # a cell that ignored the interrupt keeps its engine busy: it is killed below
            self.client[[t.engine_id for t in leaving]].apply_async(_engine.stop).get(10)
        except Exception as e:
            _log.warning("stopping the servers of %s: %s", ", ".join(sorted(names)), e)
        jobs = self.spec.as_dict()
        jobs["worker"] = [a for i, a in enumerate(jobs["worker"])
                          if f"worker:{i}" not in names]
        self.spec, self.tasks = ClusterSpec(jobs), remaining
        plans = [p for p in self._plans if p.name in names]
        self._plans = [p for p in self._plans if p.name not in names]
        self._shut_down_engines([t.engine_id for t in leaving], plans,
                                [t.pid for t in leaving if is_this_host(t.host)])
        self._announce_cluster(remaining)

    def _announce_cluster(self, tasks: List[Task]) -> None:
        """Every server of ``tasks`` (busy running cells or not) learns the current spec over
        gRPC; the names of their next cells follow (queued behind the running ones)."""
        from ..distributed.server import send_cluster_update
        for task in tasks:
            try:
                send_cluster_update(task.address, self.spec, self.token)
            except Exception as e:   # down: a restart serves it the current spec
                _log.warning("%s did not learn the new cluster: %s", task.name, e)
        self.client[[t.engine_id for t in tasks]].execute(_engine.NAMESPACE_CODE, block=False)
        if self._watcher is not None:   # it polls the tasks of the old spec
            self._watcher.close()
            self._watcher = None
        if self._registry_dir is not None:
            self._register()

    def _sync_replicas_running(self, within_s: float = 30.0) -> bool:
        """Whether a SyncReplicasOptimizer aggregated gradients in the last ``within_s``
        seconds (its accumulators' telemetry, kind ``sync``, from whichever task holds them)."""
        watcher = self.watch(interval=0.2)
        try:
            watcher.flush(timeout=5.0)
            now = time.time()
            return any(e.kind == "sync" and now - e.time < within_s
                       for e in watcher.events())
        finally:
            watcher.close()

    def running_cell(self, job: str = "worker") -> Optional[Run]:
        """The last cell run on ``job`` that has not finished (None if there is none)."""
        for run in reversed(self._runs):
            if run.code and run.job == job and run.pending_tasks():
                return run
        return None

    def runs_on(self, task: str) -> List[Run]:
        """The runs, oldest first, whose share on ``task`` has not finished."""
        return [r for r in self._runs if r.runs_on(task)]

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
                # Engines run cells through IPython, as a notebook does: magics (%run, %time)
                # and shell escapes are allowed, so check the code as IPython will run it.
                compile(_as_ipython_runs_it(code), f"<{job or 'cluster'} cell>", "exec")
            except SyntaxError as e:
                raise SyntaxError(f"the cell for the {job or 'cluster'} tasks does not compile: "
                                  f"{e.msg} (line {e.lineno})") from None
            if args or kwargs:
                raise TypeError("arguments are for functions; code runs in each task's namespace")
            async_result = view.execute(code, block=False, silent=False)
            what, source = f"the {job or 'cluster'} cell", code
        elif callable(code):
            async_result = view.apply_async(code, *args, **kwargs)
            what, source = getattr(code, "__name__", "the function"), ""
        else:
            raise TypeError(f"run() takes code (str) or a function, got {type(code).__name__}")
        run = Run(what, async_result, [t.name for t in chosen], code=source, job=job)
        if self.supervisor is not None:
            run.settle = self.supervisor.check
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

    def diagnose(self, task: Optional[str] = None):
        """Why the cluster's steps wait, followed across tasks to a root cause and a fix
        (cluster/diagnose.py; ``%tf_cluster why``). ``task``: "worker:1", to ask about it only.
        Answers within seconds even while every task is blocked."""
        from .diagnose import diagnose
        self._check_running()
        if task is not None:
            self.task(task)   # an unknown task fails here, naming the tasks
        started = time.monotonic()
        return diagnose(self, self._status_watcher(), task, started)

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
        if self.supervisor is not None:
            self.supervisor.stop()
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
        if self.supervisor is not None:
            self.supervisor.stop()
            with self._engines_lock:   # a restart under way ends first: its engine is ours
                pass
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
            try:   # bounded: an engine whose cell ignored the interrupt never gets to it
                self.client[[t.engine_id for t in self.tasks]].apply_async(_engine.stop).get(
                    processes.STOP_STEP_S)
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


def _as_ipython_runs_it(cell: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager
    return TransformerManager().transform_cell(cell)


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
