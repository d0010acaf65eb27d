"""Recovery for ``Cluster(restart=True)``: the notebook's kernel as the cluster manager.

TensorFlow 1.x leaves dead tasks to "a cluster manager"; here the kernel that drives the cluster
is one. A ``Supervisor`` thread looks at every task's engine a few times a second: a task is
dead when its process is gone (tasks on this machine) or its engine left the ipyparallel
controller. It then

1. marks the unfinished runs on that task as awaiting a rerun, so ``wait()`` waits instead of
   reporting the dead engine's error (``Run.expect_rerun``);
2. starts a new engine for the task through the same launcher and plan, on the same address and
   port (``Cluster.restart_task``), its server serving the same ClusterSpec;
3. for a worker, runs the last unfinished cell of that worker again on the new engine; its
   output goes on under ``[worker:1]`` after a line saying why. A ps comes back empty: the
   workers' MonitoredTrainingSessions see AbortedError/UnavailableError, open new sessions, and
   the chief restores the latest checkpoint (or initializes again without one);
4. notes the restart on the task (the status table's "restarts" column) and in the active
   experiment record, if there is one.

Restarts are bounded: past ``max_restarts`` in ``window_s`` a task stays dead, and its status and
runs say "restart limit reached (3 in 10 min)". Deaths are found from this thread or, through
``Run.settle``, from the thread that waits for a run, so a run never ends on an error that a
restart is about to replace. Nothing is printed from this thread (kernels route output from
other threads unreliably): runs print their notes when the caller's thread streams them.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Dict, List, Optional

from ..distributed.cluster import is_this_host
from .launch import ClusterError

__all__ = ["Supervisor", "RestartRecord", "why_dead"]

_log = logging.getLogger("tfjupyter.cluster")

POLL_S = 0.25


@dataclass
class RestartRecord:
    """One death the supervisor handled: when it found it, why, and what came of it."""
    task: str
    reason: str                 # why the task was found dead
    found: float                # time.time() when it was found dead
    serving_s: Optional[float]  # seconds from found to serving again (None: not restarted)
    error: str = ""             # why it was not restarted


def why_dead(task, engine_ids) -> Optional[str]:
    """Why ``task``'s engine is dead, or None while it lives (``engine_ids``: the controller's)."""
    if task.pid and is_this_host(task.host) and not _pid_alive(task.pid):
        return f"its process (pid {task.pid}) exited"
    if task.engine_id not in engine_ids:
        return f"its engine ({task.engine_id}) left the ipyparallel cluster"
    return None


def _pid_alive(pid: int) -> bool:
    import psutil
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class Supervisor:
    """Restarts a cluster's dead tasks, at most ``max_restarts`` per task in ``window_s``."""

    def __init__(self, cluster, max_restarts: int = 3, window_s: float = 600.0):
        if not isinstance(max_restarts, int) or max_restarts < 0 or window_s <= 0:
            raise ClusterError(f"restart limits must be max_restarts >= 0 and window_s > 0, got "
                               f"{max_restarts!r} and {window_s!r}")
        self.cluster = cluster
        self.max_restarts = max_restarts
        self.window_s = window_s
        self.history: List[RestartRecord] = []
        self._times: Dict[str, List[float]] = {}   # task -> monotonic times of its restarts
        self._handling: Dict[str, tuple] = {}      # task -> (reason, found, runs): in progress
        self._given_up: Dict[str, str] = {}        # task -> why it stays dead
        self._lock = threading.Lock()
        self._queue: "queue.Queue[Optional[str]]" = queue.Queue()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @property
    def limit_message(self) -> str:
        return (f"restart limit reached ({self.max_restarts} in "
                f"{self.window_s / 60:g} min)")

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="tfjupyter-supervisor",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._queue.put(None)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    # -- finding deaths ----------------------------------------------------------------------
    def check(self) -> None:
        """Finds the tasks that died since the last look and queues their restart."""
        if self._stop.is_set() or self.cluster.client is None:
            return
        engine_ids = set(self.cluster.client.ids)
        with self._lock:
            for task in list(self.cluster.tasks):
                if task.name in self._handling or task.name in self._given_up:
                    continue
                reason = why_dead(task, engine_ids)
                if reason is not None:
                    self._found_dead(task, reason)

    def _found_dead(self, task, reason: str) -> None:
        name, now = task.name, time.monotonic()
        _log.warning("tfjupyter cluster: %s died (%s)", name, reason)
        runs = self.cluster.runs_on(name)
        recent = [t for t in self._times.get(name, []) if now - t < self.window_s]
        self._times[name] = recent
        if len(recent) >= self.max_restarts:
            self._give_up(task, reason, runs, self.limit_message, time.time())
            return
        rerun = self._rerun_of(task, runs)
        for run in runs:
            if run is rerun:
                run.expect_rerun(name, reason)
            else:
                run.give_up(name, "TaskDied", f"{name} died ({reason}) and is restarted"
                            + ("" if task.job == "worker" else " empty")
                            + "; this run is not run again there")
        task.note = f"restarting: {reason}"
        self._handling[name] = (reason, time.time(), rerun)
        self._queue.put(name)

    @staticmethod
    def _rerun_of(task, runs):
        """The run a restarted worker runs again: the last unfinished cell (a function's
        arguments are not kept, and a ps comes back empty)."""
        cells = [r for r in runs if r.code] if task.job == "worker" else []
        return cells[-1] if cells else None

    def _give_up(self, task, reason: str, runs, why: str, found: float) -> None:
        name = task.name
        self._given_up[name] = why
        task.note = why
        for run in runs:
            run.give_up(name, "TaskDied", f"{name} died ({reason}) and stays dead: {why}")
        self.history.append(RestartRecord(name, reason, found, None, why))
        _record(name, "restart failed", task, f"{reason}; {why}")
        _log.error("tfjupyter cluster: %s stays dead: %s", name, why)

    # -- restarting ----------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                name = self._queue.get(timeout=POLL_S)
            except queue.Empty:
                try:
                    self.check()
                except Exception as e:   # keep watching: the next look may succeed
                    _log.debug("supervisor check: %s", e)
                continue
            if name is not None and not self._stop.is_set():
                try:
                    self._restart(name)
                except Exception as e:   # the task went meanwhile (a scale-down, a stop)
                    _log.warning("tfjupyter cluster: restarting %s: %s", name, e)
                    with self._lock:
                        self._handling.pop(name, None)

    def _restart(self, name: str) -> None:
        reason, found, rerun = self._handling[name]
        old = self.cluster.task(name)
        try:
            task = self.cluster.restart_task(name)
        except Exception as e:
            with self._lock:
                self._handling.pop(name, None)
                message = str(e) if isinstance(e, ClusterError) else f"{type(e).__name__}: {e}"
                self._give_up(old, reason, [rerun] if rerun else [], message, found)
            return
        with self._lock:
            self._times.setdefault(name, []).append(time.monotonic())
            serving_s = time.time() - found
            self.history.append(RestartRecord(name, reason, found, serving_s))
            if rerun is not None:
                result = self.cluster.client[task.engine_id].execute(rerun.code, block=False,
                                                                     silent=False)
                rerun.rerun(name, result, f"restarted on a new engine (pid {task.pid}) after "
                                          f"{reason}; running the cell again")
            self._handling.pop(name, None)
        _record(name, "restarted", task, reason)
        _log.warning("tfjupyter cluster: %s restarted in %.1f s (pid %d)", name, serving_s,
                     task.pid)


def _record(name: str, state: str, task, reason: str) -> None:
    """Writes the event into the active experiment record, if there is one."""
    from ..experiments import current
    experiment = current()
    if experiment is not None:
        experiment.record_task_event(name, state, host=task.host, pid=task.pid, error=reason)
