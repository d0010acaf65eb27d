"""``Experiment``: records what ran where, how fast and how well, into one folder.

Threads. The training thread pays one ``deque.append`` per event: the recorder subscribes the
inbox's own ``append`` to ``runtime.events`` "step", "summary" and "placement" (plus the
session tracker's set lookup per step, sessions.py). A telemetry watcher's thread appends the
cluster's events the same way (a task's telemetry starts with what it did before the
experiment, by its clock; those records are dropped, and ``end()`` polls the tasks once more
so their last records are in). One background thread (the flusher) wakes every
``flush_every`` seconds (0.5), folds what arrived into timeline lines and TensorBoard events,
and hands them to the OS, so a killed kernel loses at most the last half second.

What one flush writes to ``events.jsonl`` (one JSON object per line, ``kind`` first):

* ``steps``: per task, the runs that ended since the previous line: ``t`` (end of the last
  one, the task's clock), ``t0`` (start of the span the rates divide by), ``runs``,
  ``batches`` (runs that carried a batch), ``examples``, ``global_step`` (last fetched, else
  null), ``steps_per_sec``/``examples_per_sec`` over the span, and the running totals
  ``total_steps``/``total_examples``. A step is a run that carried a batch, or any run while
  the task never carried one (as the dashboard's and the telemetry's rates).
* ``scalar``: task, tag, value, step, t — every scalar summary, at most ``SCALARS_PER_FLUSH``
  per task and tag per flush (evenly spaced, always the last: a loss logged every step of a
  2,000 steps/s loop is noise; TensorBoard samples too). ``step`` is the global step the run
  that computed the summary fetched, else the one the task last reported, else the task's
  step count.
* ``placement``: task, op, type, requested, assigned, reason.
* ``task``: task, state ("alive"/"dead"), host, pid, t — a cluster task coming up or dying.
"""
from __future__ import annotations

import atexit
import collections
import os
import socket
import sys
import threading
import time
import weakref
from typing import Dict, List, Optional

from ..framework.device import short_task
from ..runtime import events
from . import store
from .cells import CellCapture, write_notebook
from .environment import environment
from .sessions import (SessionTracker, collect, find_checkpoint, graph_def_from_placement,
                       install)
from .tensorboard_writer import TensorBoardWriter, run_dir

__all__ = ["Experiment", "current", "DEFAULT_DIR", "SCALARS_PER_FLUSH"]

DEFAULT_DIR = "experiments"     # records go to ./experiments/NAME unless dir= says otherwise
SCALARS_PER_FLUSH = 50
SYNC_EVERY = 5.0                # seconds between fsyncs of the timeline
LOCAL = "local"                 # the task name of this process's own sessions
ENGINE_TIMEOUT = 15.0           # seconds an idle engine gets to answer install()/collect()

_current: Optional["Experiment"] = None
_running: "weakref.WeakSet[Experiment]" = weakref.WeakSet()


def current() -> Optional["Experiment"]:
    """The experiment started last in this process that has not ended, if any."""
    return _current if _current is not None and _current.running else None


class _Task:
    """The flusher's state for one task."""

    def __init__(self):
        self.runs = self.batches = self.examples = 0   # since the experiment began
        self.global_step: Optional[int] = None
        self.last_t: Optional[float] = None     # end of the last step already written
        self.window: Optional[dict] = None      # the steps since the last line
        self.pending: List[tuple] = []          # summaries waiting for their run's step record

    def steps(self) -> int:
        return self.batches if self.batches else self.runs


class Experiment:
    """Records one experiment into ``dir/NAME`` (``./experiments/NAME`` by default).

        with tfjupyter.experiments.Experiment("baseline", config={"lr": 0.1}):
            ...train...
        # or: exp = Experiment("baseline").start(); ...; record = exp.end()

    ``dir``: the folder that holds experiment folders. If ``dir/NAME`` exists, the record goes
    to ``dir/NAME-2`` (``-3``, ...) and ``path`` says where: a record is never overwritten.
    ``cluster``: None follows the kernel's running clusters if there are any (``True``
    requires one, ``False`` follows none, or pass a ``Cluster``); this process's own sessions
    are always recorded, as task ``local``. ``config``: your settings (learning rate, mode...),
    shown by ``compare``. ``checkpoint_dir``: where the training saves checkpoints (found by
    a search of the working folder at the end otherwise). ``shell``: the IPython shell whose
    cells are recorded (default: the running one, if any).

    ``end()`` returns the loaded ``ExperimentRecord``. An exception leaving the ``with`` block
    ends the record with status ``failed``; a process that exits (or is killed) first leaves it
    ``interrupted``, with everything up to then.
    """

    def __init__(self, name: str, dir: Optional[str] = None, cluster=None,
                 config: Optional[dict] = None, checkpoint_dir: Optional[str] = None,
                 shell=None, flush_every: float = 0.5):
        self.name = store.check_name(name)
        self.parent = os.path.abspath(dir if dir is not None else DEFAULT_DIR)
        if config is not None and not isinstance(config, dict):
            raise TypeError(f"Experiment: config must be a dict, got {type(config).__name__}")
        if flush_every <= 0:
            raise ValueError("Experiment: flush_every must be positive")
        self.config = dict(config or {})
        self.checkpoint_dirs = [os.path.abspath(checkpoint_dir)] if checkpoint_dir else []
        self.flush_every = float(flush_every)
        self._want_cluster = cluster
        self._shell = shell
        self.path: Optional[str] = None
        self.status = "new"
        self.meta: dict = {}
        self.clusters: list = []
        self._watchers: list = []
        self._inbox: collections.deque = collections.deque()
        self._tasks: Dict[str, _Task] = {}
        self._tensorboard: Optional[TensorBoardWriter] = None
        self._own_tasks: set = set()             # cluster tasks served by this very process
        self._placed: set = set()                # (task, op) of the placement lines written
        self._graphs_written: Dict[int, int] = {}  # local session id -> placed ops when written
        self._last_placed: Optional[tuple] = None  # (session, placed ops) at the last check
        self._last_sync = 0.0
        self._meta_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._tracker: Optional[SessionTracker] = None
        self._cells: Optional[CellCapture] = None
        self._events: Optional[store.JsonLines] = None

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.status == "running"

    def start(self) -> "Experiment":
        """Creates the folder, writes the metadata (status ``running``) and starts recording."""
        global _current
        if self.status != "new":
            raise RuntimeError(f"experiment {self.name!r} was already started ({self.status})")
        clusters = self._clusters()
        self.path = store.make_folder(self.parent, self.name)
        self.id = os.path.basename(self.path)
        self.started = time.time()
        self._events = store.JsonLines(os.path.join(self.path, store.EVENTS))
        self._tensorboard = TensorBoardWriter(self.path, on_new_run=self._note_run)
        if self._shell is None:
            self._shell = _ipython()
        self.meta = {
            "format": 1, "name": self.name, "id": self.id, "status": "running",
            "started": self.started, "ended": None, "error": None, "config": self.config,
            "writer": {"pid": os.getpid(), "host": socket.gethostname(),
                       "process_start": _process_start()},
            "environment": environment(self._shell), "sessions": {}, "cluster": None,
            "graphs": {}, "runs": {}, "checkpoint": None, "cells": 0,
        }
        self.status = "running"
        self._write_meta()
        # Listeners: the inbox's own append (no Python frame on the training thread).
        self._tracker = SessionTracker()
        for kind in ("step", "summary", "placement"):
            events.subscribe(kind, self._inbox.append)
        for cluster in clusters:
            self._follow(cluster)
        if self._shell is not None:
            self._cells = CellCapture(self._shell, self.path)
            self._cells.start()
        self._thread = threading.Thread(target=self._run, name=f"tfjupyter-experiment-{self.id}",
                                        daemon=True)
        self._thread.start()
        _current = self
        _running.add(self)
        return self

    def end(self, status: str = "finished", error: Optional[str] = None):
        """Stops recording, writes the graphs, checkpoint and cells, marks the record
        ``status`` and returns it loaded (an ``ExperimentRecord``)."""
        global _current
        if self.status == "new":
            raise RuntimeError(f"experiment {self.name!r} was never started")
        if self.status != "running":
            raise RuntimeError(f"experiment {self.name!r} has already ended ({self.status})")
        try:
            self._stop_listening()
            if self._cells is not None:
                self._cells.stop()
            for cluster in self.clusters:
                self._collect_from_engines(cluster)
            self._write_local_graphs(final=True)
            self._find_checkpoint()
        except BaseException as e:
            # The record still ends (what it has is kept), or it would read as running and
            # block the next start until this process exits.
            self._finish("failed", f"ending the record failed: {type(e).__name__}: {e}")
            raise
        finally:
            if _current is self:
                _current = None
        self._finish(status, error)
        from .record import load
        return load(self.path)

    def track_session(self, session) -> None:
        """Records ``session`` (a tf.Session) from now on, before its first step: its graph
        and the devices it assigns (sessions are otherwise found at their first step)."""
        if not self.running:
            raise RuntimeError(f"experiment {self.name!r} is not running ({self.status})")
        self._tracker.add(session)

    def record_task_event(self, task: str, state: str, host: Optional[str] = None,
                          pid: Optional[int] = None, error: Optional[str] = None) -> None:
        """A cluster task's event that telemetry does not see (the cluster restarted it, or
        gave up): a "task" line of the timeline, as the alive and dead ones."""
        self._inbox.append({"kind": "task", "task": task, "state": state, "host": host,
                            "pid": pid, "error": error, "t": time.time()})

    def abandon(self, reason: str = "the process exited before the experiment ended") -> None:
        """Ends the record as ``interrupted`` without asking engines anything (atexit)."""
        if self.status == "running":
            self._stop_listening(ask_tasks=False)
            self._finish("interrupted", reason)

    def _stop_listening(self, ask_tasks: bool = True) -> None:
        for kind in ("step", "summary", "placement"):
            events.unsubscribe(kind, self._inbox.append)
        for watcher in self._watchers:
            if ask_tasks:
                watcher.flush()   # the tasks' last records (up to a poll interval of them)
            watcher.remove_callback(self._inbox.append)
            watcher.close()
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(30)
        self._flush(final=True)
        if self._tracker is not None:
            self._tracker.close()

    def _finish(self, status: str, error: Optional[str]) -> None:
        self._tensorboard.close()
        self._events.close()
        if self._cells is not None:
            self._cells.close()
        cells = write_notebook(self.path, self.name, self.id)
        self.status = status
        with self._meta_lock:
            self.meta.update(status=status, ended=time.time(), error=error, cells=cells)
        self._write_meta()
        _running.discard(self)

    def __enter__(self) -> "Experiment":
        return self.start() if self.status == "new" else self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.status == "running":
            if exc_type is None:
                self.record = self.end()
            elif issubclass(exc_type, KeyboardInterrupt):
                self.record = self.end("interrupted", "KeyboardInterrupt")
            else:
                self.record = self.end("failed", f"{exc_type.__name__}: {exc}")
        return False

    def __repr__(self) -> str:
        where = f" in {self.path}" if self.path else ""
        return f"<Experiment {self.name!r} {self.status}{where}>"

    # -- clusters ----------------------------------------------------------------------------------
    def _clusters(self) -> list:
        want = self._want_cluster
        if want is False:
            return []
        if want is not None and want is not True:
            return [want]
        module = sys.modules.get("tfjupyter.cluster.cluster")   # none imported: none running
        clusters = module.serving_clusters() if module is not None else []
        if want is True and not clusters:
            raise RuntimeError("Experiment(cluster=True): no cluster is running in this kernel; "
                               "start one with '%tf_cluster start --ps 1 --workers 2'")
        return clusters

    def _follow(self, cluster) -> None:
        self.clusters.append(cluster)
        watcher = cluster.watch(interval=0.5, max_events=1)  # the callback takes every event
        watcher.add_callback(self._inbox.append)
        self._watchers.append(watcher)
        tasks = [{"task": t.name, "host": t.host, "pid": t.pid, "address": t.address,
                  "engine": t.engine_id, "devices": list(t.devices)} for t in cluster.tasks]
        with self._meta_lock:
            self.meta["cluster"] = {"spec": cluster.spec.as_dict(), "engines": cluster.engines,
                                    "tasks": tasks, "collected": {}}
        self._write_meta()
        # Track the sessions the engines run (their graphs with assigned devices), on the
        # engines that are idle now (a busy one would answer only after its cell).
        busy = cluster.busy_tasks()
        idle = [t for t in cluster.tasks if t.name not in busy]
        self._on_engines(cluster, idle, install)

    def _on_engines(self, cluster, tasks, fn, *args) -> Dict[str, object]:
        """``fn(*args)`` on the engines of ``tasks``, all at once; task -> result (errors are
        noted in the metadata, never raised: a record is worth keeping without the engines'
        part). One run per task, so that each task's answer is kept whatever the others do."""
        from ..cluster import TaskError
        runs = {}
        for task in tasks:
            try:
                runs[task.name] = cluster.run(fn, *args, job=task.job, tasks=[task.index],
                                              block=False)
            except Exception as e:
                self._note(f"{task.name}: {fn.__name__}: {type(e).__name__}: {e}")
        results = {}
        deadline = time.monotonic() + ENGINE_TIMEOUT
        for name, run in runs.items():
            try:
                results.update(run.result(max(0.1, deadline - time.monotonic())))
            except TaskError as e:
                for failed, (error, message, _) in e.failures.items():
                    self._note(f"{failed}: {fn.__name__}: {error}: {message}")
            except Exception as e:
                self._note(f"{name}: {fn.__name__}: {type(e).__name__}: {e}")
        return results

    def _collect_from_engines(self, cluster) -> None:
        busy = cluster.busy_tasks()
        for name in sorted(busy):
            self._note(f"{name}: still running a cell at the end: its graph was not fetched")
        idle = [t for t in cluster.tasks if t.name not in busy]
        results = self._on_engines(cluster, idle, collect, self.started)
        for task, got in results.items():
            with self._meta_lock:
                self.meta["sessions"][task] = got["sessions"]
                self.meta["cluster"]["collected"][task] = {"cwd": got["cwd"]}
            if got["graphs"]:
                from tensorboard.compat.proto import graph_pb2
                graph_def = graph_pb2.GraphDef()
                graph_def.ParseFromString(got["graphs"][0][2])
                self._write_graph(task, graph_def, got["graphs"][0][0], fetched=True)
            if got["checkpoint"]:
                self._offer_checkpoint(got["checkpoint"], task)
        # Tasks with placements but no graph fetched (busy, failed, or no session kept): a
        # graph of their placed ops, so TensorBoard still shows what ran where.
        for task, rows in self._placement_rows().items():
            if task not in self.meta["graphs"] and task != LOCAL:
                self._write_graph(task, graph_def_from_placement(rows), None, fetched=False)

    def _placement_rows(self) -> Dict[str, List[dict]]:
        rows: Dict[str, List[dict]] = {}
        for line in store.read_jsonl(os.path.join(self.path, store.EVENTS)):
            if line.get("kind") == "placement":
                rows.setdefault(line["task"], []).append(line)
        return rows

    def _note(self, message: str) -> None:
        with self._meta_lock:
            self.meta.setdefault("notes", []).append(message)

    # -- graphs and checkpoints --------------------------------------------------------------------
    def _write_local_graphs(self, final: bool = False) -> None:
        """The graph of the local session that placed the most ops, with assigned devices;
        rewritten when its placement grew and has settled (unchanged since the last flush)."""
        sessions = self._tracker.summaries() if self._tracker is not None else []
        if not sessions:
            return
        with self._meta_lock:
            self.meta["sessions"][LOCAL] = sessions
        self._write_session_placement()
        best = max(sessions, key=lambda s: s["placed_ops"])
        placed = best["placed_ops"]
        written = self._graphs_written.get(best["session"])
        settled = self._last_placed == (best["session"], placed)
        self._last_placed = (best["session"], placed)
        if placed and written != placed and (settled or final):
            for sid, n, graph_def in self._tracker.graph_defs():
                if sid == best["session"]:
                    self._write_graph(LOCAL, graph_def, sid, fetched=True)
                    self._graphs_written[sid] = n
                    break
        elif final:
            self._write_meta()

    def _write_session_placement(self) -> None:
        """Placement lines for the decisions tracked sessions made before the experiment
        started (or that no "placement" event carried), so the record says where every op
        that ran is."""
        for s in list(self._tracker.sessions.values()):
            for record in list(s["placer"].records.values()):
                if (LOCAL, record.op) not in self._placed:
                    self._placed.add((LOCAL, record.op))
                    self._events.write({"kind": "placement", "task": LOCAL, "op": record.op,
                                        "type": record.type, "requested": record.requested,
                                        "assigned": record.assigned, "reason": record.reason})

    def _write_graph(self, task: str, graph_def, session: Optional[int], fetched: bool) -> None:
        os.makedirs(os.path.join(self.path, "graphs"), exist_ok=True)
        name = os.path.join("graphs", run_dir(task) + ".pb")
        store.write_bytes(os.path.join(self.path, name), graph_def.SerializeToString())
        self._tensorboard.graph(task, graph_def)
        with self._meta_lock:
            self.meta["graphs"][task] = {"file": name, "session": session,
                                         "nodes": len(graph_def.node), "edges": fetched}
        self._write_meta()

    def _find_checkpoint(self) -> None:
        roots = self.checkpoint_dirs + [os.getcwd()]
        notebook = self.meta["environment"].get("notebook")
        if notebook and os.path.isabs(notebook):
            roots.append(os.path.dirname(notebook))
        found = find_checkpoint(roots, self.started)
        if found:
            self._offer_checkpoint(found, LOCAL)

    def _offer_checkpoint(self, found: dict, task: str) -> None:
        with self._meta_lock:
            known = self.meta["checkpoint"]
            if known is None or found["written"] > known["written"]:
                self.meta["checkpoint"] = dict(found, task=task)

    # -- metadata ----------------------------------------------------------------------------------
    def _write_meta(self) -> None:
        with self._meta_lock:
            store.write_json(os.path.join(self.path, store.METADATA), self.meta)

    def _note_run(self, task: str, run: str) -> None:
        """A task's TensorBoard run was made: listed in the metadata."""
        with self._meta_lock:
            self.meta["runs"][task] = run
        self._write_meta()

    # -- the flusher -------------------------------------------------------------------------------
    def _run(self) -> None:
        next_graph_check = 0.0
        while not self._stop.wait(self.flush_every):
            try:
                self._flush()
                now = time.monotonic()
                if now >= next_graph_check:
                    next_graph_check = now + 2.0
                    self._write_local_graphs()
                    if self.checkpoint_dirs:
                        found = find_checkpoint(self.checkpoint_dirs, self.started, max_depth=1)
                        if found and found != self.meta["checkpoint"]:
                            self._offer_checkpoint(found, LOCAL)
                            self._write_meta()
            except Exception as e:   # say why, keep recording
                self._note(f"flusher: {type(e).__name__}: {e}")

    def _flush(self, final: bool = False) -> None:
        """Folds the inbox into timeline lines and TensorBoard events (flusher thread, or the
        caller of end() once the flusher has stopped)."""
        # Telemetry events come only from a followed cluster (importing the module imports
        # grpc, which a local experiment does not need).
        telemetry = sys.modules.get("tfjupyter.distributed.telemetry")
        telemetry_event = telemetry.TelemetryEvent if telemetry is not None else None
        inbox = self._inbox
        scalars: Dict[tuple, list] = {}
        placement: List[dict] = []
        while inbox:
            item = inbox.popleft()
            kind = type(item)
            if kind is events.StepRecord:
                self._step(LOCAL, item.wall_time, item.duration, item.examples,
                           item.global_step, scalars)
            elif kind is events.SummaryRecord:
                self._tasks_get(LOCAL).pending.append(
                    (item.tag, item.value, item.wall_time, None))
            elif kind is list:
                placement += [{"kind": "placement", "task": LOCAL, "op": r.op, "type": r.type,
                               "requested": r.requested, "assigned": r.assigned,
                               "reason": r.reason} for r in item]
            elif kind is telemetry_event:
                self._telemetry(item, scalars, placement)
            elif kind is dict:   # a timeline line as it is (record_task_event)
                self._events.write(item)
        for line in placement:
            self._placed.add((line["task"], line["op"]))
            self._events.write(line)
        for name, task in self._tasks.items():
            self._write_steps(name, task)
            # Summaries whose step record has not come (yet) go out after a second.
            if task.pending and (final or time.time() - task.pending[0][2] > 1.0):
                self._attach(name, task, None, scalars)
        self._write_scalars(scalars)
        self._events.flush()
        now = time.monotonic()
        if final or now - self._last_sync >= SYNC_EVERY:
            self._last_sync = now
            self._events.sync()
        self._tensorboard.flush()

    def _tasks_get(self, name: str) -> _Task:
        task = self._tasks.get(name)
        if task is None:
            task = self._tasks[name] = _Task()
        return task

    def _step(self, name: str, end: float, duration: float, examples: int,
              global_step: Optional[int], scalars: dict) -> None:
        task = self._tasks_get(name)
        w = task.window
        if w is None:
            w = task.window = {"t0": end - duration, "runs": 0, "batches": 0, "examples": 0,
                               "busy": 0.0, "global_step": None}
        w["runs"] += 1
        w["busy"] += duration
        w["t"] = end
        task.runs += 1
        if examples:
            w["batches"] += 1
            w["examples"] += examples
            task.batches += 1
            task.examples += examples
        if global_step is not None:
            w["global_step"] = task.global_step = int(global_step)
        if task.pending:
            self._attach(name, task, global_step, scalars)

    def _attach(self, name: str, task: _Task, global_step: Optional[int], scalars: dict) -> None:
        """Gives the task's pending summaries their step (see the module docstring)."""
        for tag, value, t, hint in task.pending:
            step = global_step if global_step is not None else hint if hint is not None else \
                task.global_step if task.global_step is not None else task.steps()
            scalars.setdefault((name, tag), []).append((int(step), float(value), t))
        task.pending = []

    def _write_steps(self, name: str, task: _Task) -> None:
        w = task.window
        if w is None:
            return
        task.window = None
        # The span the rates divide by: since the previous line's last step, unless the task
        # sat idle in between (a gap > 1 s between cells), then since this window's first start.
        t0 = task.last_t if task.last_t is not None and w["t0"] - task.last_t <= 1.0 else w["t0"]
        # (Not the sum of the runs' durations: runs of other threads overlap the training
        # runs, e.g. a sync chief's queue runner, which waits in a run all the time.)
        span = max(w["t"] - t0, 1e-6)
        steps = w["batches"] if task.batches else w["runs"]
        task.last_t = w["t"]
        line = {"kind": "steps", "task": name, "t": w["t"], "t0": t0, "runs": w["runs"],
                "batches": w["batches"], "examples": w["examples"], "busy": round(w["busy"], 6),
                "global_step": w["global_step"] if w["global_step"] is not None
                else task.global_step,
                "steps_per_sec": steps / span, "examples_per_sec": w["examples"] / span,
                "total_steps": task.steps(), "total_examples": task.examples}
        self._events.write(line)
        step = line["global_step"] if line["global_step"] is not None else line["total_steps"]
        self._tensorboard.scalar(name, "throughput/steps_per_sec", line["steps_per_sec"], step,
                                 w["t"])
        self._tensorboard.scalar(name, "throughput/examples_per_sec", line["examples_per_sec"],
                                 step, w["t"])

    def _write_scalars(self, scalars: dict) -> None:
        for (name, tag), points in scalars.items():
            if len(points) > SCALARS_PER_FLUSH:   # evenly spaced, always the last
                n = len(points)
                points = [points[(i * (n - 1)) // (SCALARS_PER_FLUSH - 1)]
                          for i in range(SCALARS_PER_FLUSH)]
            for step, value, t in points:
                self._events.write({"kind": "scalar", "task": name, "tag": tag, "value": value,
                                    "step": step, "t": t})
                self._tensorboard.scalar(name, tag, value, step, t)

    def _telemetry(self, event, scalars: dict, placement: List[dict]) -> None:
        kind, data, name = event.kind, event.data, short_task(event.task)
        if kind in ("alive", "dead"):
            if kind == "alive" and data.get("pid") == os.getpid() and \
                    data.get("host") == socket.gethostname():
                self._own_tasks.add(name)   # its records reach us as local events already
            self._events.write({"kind": "task", "task": name, "state": kind,
                                "host": data.get("host"), "pid": data.get("pid"),
                                "error": data.get("error"), "t": event.time})
            return
        if name in self._own_tasks:
            return
        if event.time < self.started and kind in ("step", "summary", "placement"):
            return   # a task's telemetry begins with what it did before this experiment
        if kind == "step":
            self._step(name, event.time, data.get("duration", 0.0), data.get("examples", 0),
                       data.get("global_step"), scalars)
        elif kind == "summary":
            self._tasks_get(name).pending.append(
                (data["tag"], data["value"], event.time, data.get("global_step")))
        elif kind == "placement":
            placement.append({"kind": "placement", "task": name, "op": data["op"],
                              "type": data["type"], "requested": data["requested"],
                              "assigned": data["assigned"], "reason": data["reason"]})

def _ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _process_start() -> Optional[float]:
    try:
        import psutil
        return psutil.Process().create_time()
    except Exception:
        return None


@atexit.register
def _abandon_running() -> None:
    for experiment in list(_running):
        try:
            experiment.abandon()
        except Exception:
            pass
