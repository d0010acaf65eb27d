"""``%tf_cluster why``: what a hung cluster's tasks wait for, followed across tasks to a cause.

Every task's telemetry reports what its threads are blocked in and the steps it has in flight
(runtime/waits.py, distributed/telemetry.py). ``diagnose`` reads them from the cluster's status
watcher after one fresh poll (bounded: a frozen task costs its 1 s poll deadline, never more),
so it answers within seconds while every task is blocked; it never runs code on the engines,
which do not answer while their cells are blocked.

A wait is followed to what would end it:

* a ``_Recv`` -> the sending task (its partition of the same step, or why it cannot send);
* a dequeue -> the step in flight whose plan enqueues to that queue (the chief's queue runner
  fills a sync-replicas token queue) -> what that step waits in; no such step: nothing fills it;
* an accumulator's take_grad -> the workers whose gradient did not come this round;
* SessionManager's readiness loop -> the chief and what it does.

The chain ends at a dead task (its process gone, its engine gone), a frozen one (SIGSTOPped: it
does not answer; psutil says "stopped" when its pid is on this host) or a task that is not
blocked; the last link gives the root cause in one sentence and the usual fix.
"""
from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..distributed.cluster import is_this_host
from ..framework.device import short_task
from ..tables import html_table, text_table

__all__ = ["Diagnosis", "TaskReport", "diagnose", "waiting_in"]

STUCK_S = 1.0        # the status tables show waits this old (shorter ones are a step's routine)
ANSWER_S = 4.5       # diagnose answers within this, a new status watcher's first replies included
FRESH_POLL_S = 2.5   # the fresh poll's bound: a frozen task's in-flight poll and the next one
                     # each fail at their 1 s deadline

FIX_BACKUP = ("give SyncReplicasOptimizer a backup worker (replicas_to_aggregate < "
              "total_num_replicas) so one lost worker does not stop the others, and start the "
              "cluster with --restart so a dead task comes back; "
              "ConfigProto(operation_timeout_in_ms=...) turns the hang into an error")
FIX_DEAD = ("start the cluster with --restart so a dead task comes back; "
            "ConfigProto(operation_timeout_in_ms=...) turns such hangs into errors")
FIX_FROZEN = ("resume the task (kill -CONT <pid>) or end it; "
              "ConfigProto(operation_timeout_in_ms=...) turns such hangs into errors")
FIX_RUNNERS = ("start the queue runners that fill it (tf.train.start_queue_runners(sess), or a "
               "MonitoredTrainingSession, which starts them) or close the queue when done")
FIX_CHIEF = ("run the training cell on the chief too: exactly one task must create its session "
             "with is_chief=True (MonitoredTrainingSession(is_chief=...)) and initialize the "
             "model")


@dataclass
class TaskReport:
    """One task: its state ("alive", "dead", "frozen", "unknown"), why it is not alive, what its
    steps wait in (one line each) and the tasks it waits for."""
    task: str
    state: str
    reason: str = ""
    waits: List[str] = field(default_factory=list)
    waiting_for: List[str] = field(default_factory=list)


@dataclass
class Diagnosis:
    """``tasks``: a TaskReport per task; ``chain``: the waits followed, one sentence each;
    ``root_cause`` (one sentence), ``root_task`` (the task it names, if any), ``fix``;
    ``elapsed_s``: how long the diagnosis took."""
    tasks: List[TaskReport]
    chain: List[str]
    root_cause: str
    root_task: Optional[str]
    fix: str
    elapsed_s: float

    def task(self, name: str) -> TaskReport:
        return next(t for t in self.tasks if t.task == name)

    def _cells(self) -> List[List[str]]:
        return [[t.task, t.state + (f" ({t.reason})" if t.reason else ""),
                 "; ".join(t.waits) or ("not blocked" if t.state == "alive" else "")]
                for t in self.tasks]

    def __str__(self) -> str:
        lines = [f"Why the cluster waits (answered in {self.elapsed_s:.1f} s):"]
        lines += ["  " + line for line in text_table(_HEADER, self._cells())]
        if self.chain:
            lines.append("Followed:")
            lines += [f"  {i}. {link}" for i, link in enumerate(self.chain, 1)]
        lines.append(f"Root cause: {self.root_cause}")
        if self.fix:
            lines.append(f"Fix: {self.fix}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        e = html.escape
        chain = "".join(f"<li>{e(link)}</li>" for link in self.chain)
        return (html_table(f"Why the cluster waits (answered in {self.elapsed_s:.1f} s)",
                           _HEADER, self._cells())
                + (f"<ol>{chain}</ol>" if chain else "")
                + f"<p><b>Root cause:</b> {e(self.root_cause)}</p>"
                + (f"<p><b>Fix:</b> {e(self.fix)}</p>" if self.fix else ""))


_HEADER = ("task", "state", "waits in")


# -- reading the telemetry -------------------------------------------------------------------------
class _View:
    """The cluster as its telemetry shows it: tasks' states, every wait with its origin."""

    def __init__(self, cluster, snapshot: Dict, now: float):
        self.now = now
        self.tasks = [t.name for t in cluster.tasks]
        self.state: Dict[str, Tuple[str, str]] = {}
        engines = set(cluster.client.ids)
        for t in cluster.tasks:
            self.state[t.name] = _liveness(t, snapshot.get(t.device_name), t.engine_id in engines)
        # step id -> the task whose master runs it (a Session.run of its process)
        self.origin: Dict[int, str] = {}
        self.waits: List[dict] = []     # every wait, with "where" (its task) and "origin"
        self.steps: List[dict] = []     # every step in flight, with "where"
        for t in cluster.tasks:
            status = snapshot.get(t.device_name)
            if status is None or self.state[t.name][0] != "alive":
                continue
            for s in status.steps_in_flight:
                self.steps.append(dict(s, where=t.name))
                if s["kind"] == "session":
                    self.origin[s["step_id"]] = t.name
            self.waits += [dict(w, where=t.name) for w in status.waits]
        for w in self.waits:
            w["origin"] = self.origin.get(w["step_id"]) or (
                w["where"] if w["kind"] == "readiness" else None)

    def dead_or_frozen(self, task: str) -> bool:
        return self.state.get(task, ("unknown", ""))[0] in ("dead", "frozen")

    def waits_of(self, task: str) -> List[dict]:
        """What ``task``'s steps wait in, wherever (its partitions on other tasks too), and the
        waits on its devices whose step's origin is unknown."""
        return [w for w in self.waits
                if w["origin"] == task or (w["origin"] is None and w["where"] == task)]

    def primary(self, waits: List[dict]) -> Optional[dict]:
        """The wait to follow first: a _Recv from a dead or frozen peer, else a wait on a queue
        or for readiness (a training step's), else an accumulator's (a queue runner's, which
        the dequeue leads to anyway), else a _Recv (its peer's partition explains it); the
        oldest of its kind."""
        def rank(w):
            if w["kind"] == "recv":
                return 0 if self.dead_or_frozen(short_task(w["details"].get("peer", ""))) else 3
            return 2 if w["kind"] == "accumulator" else 1
        return min(waits, key=lambda w: (rank(w), w["since"])) if waits else None

    def age(self, w: dict) -> str:
        return f"{max(0.0, self.now - w['since']):.0f} s"


def _liveness(task, status, engine_alive: bool) -> Tuple[str, str]:
    """(state, reason) of a task: the process's own state where it runs on this host (a
    SIGSTOPped process is "frozen" at once, before its polls time out), else telemetry's."""
    process = _process_state(task.pid) if task.pid and is_this_host(task.host) else None
    if process == "gone":
        return "dead", f"its process {task.pid} is gone"
    if process == "zombie":
        return "dead", f"its process {task.pid} exited"
    if process == "stopped":
        return "frozen", f"its process {task.pid} is stopped (SIGSTOP): it runs nothing"
    if not engine_alive:
        return "dead", "its engine left the ipyparallel cluster"
    if status is None:
        return "unknown", "no telemetry yet"
    if status.state == "dead":
        return "dead", f"it does not answer: {status.error or 'no reply'}"
    if status.state != "alive":
        return "unknown", status.error or ""
    return "alive", ""


def _process_state(pid: int) -> Optional[str]:
    try:
        import psutil
    except ImportError:
        return None
    try:
        status = psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return "gone"
    except psutil.Error:
        return None
    if status == psutil.STATUS_STOPPED:
        return "stopped"
    if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
        return "zombie"
    return "running"


# -- describing waits ------------------------------------------------------------------------------
def _resource_text(w: dict) -> str:
    d, kind = w["details"], w["kind"]
    if kind == "queue":
        capacity = d.get("capacity")
        return (f"{d.get('queue_type', 'queue')} '{w['resource']}' (size {d.get('size')}, "
                f"capacity {'unbounded' if capacity is None else capacity}"
                f"{', closed' if d.get('closed') else ''})")
    if kind == "accumulator":
        return (f"accumulator '{w['resource']}' ({d.get('received')} of {d.get('needed')} "
                f"gradients)")
    if kind == "recv":
        return f"a tensor from {short_task(d.get('peer', '?'))} ({d.get('key')})"
    if kind == "readiness":
        names = d.get("uninitialized") or []
        return ("the model to be initialized (uninitialized: "
                f"{', '.join(names[:5]) + (', ...' if len(names) > 5 else '') or 'unknown'})")
    return repr(w["resource"])


def _wait_text(view: _View, w: dict) -> str:
    where = f" on {w['where']}" if w["origin"] and w["where"] != w["origin"] else ""
    op = f"{w['type']} '{w['op']}'{where}" if w["op"] else "SessionManager.wait_for_session"
    return f"{op}, for {_resource_text(w)}, since {view.age(w)}"


def waiting_in(task: str, snapshot: Dict) -> str:
    """A short "waiting in" cell for the status tables: the op type, resource and time of the
    wait that holds ``task``'s step ("QueueDequeueV2 sync_token_q 12s"), or ""."""
    now = time.time()
    waits, origin = [], {}
    for name, status in snapshot.items():
        for s in status.steps_in_flight:
            if s["kind"] == "session":
                origin[s["step_id"]] = short_task(name)
    for name, status in snapshot.items():
        for w in status.waits:
            mine = origin.get(w["step_id"], short_task(name) if w["kind"] == "readiness" else None)
            if mine == task or (mine is None and short_task(name) == task):
                waits.append(w)
    waits = [w for w in waits if now - w["since"] >= STUCK_S]
    if not waits:
        return ""
    w = min(waits, key=lambda w: (w["kind"] == "recv", w["kind"] == "accumulator", w["since"]))
    label = w["type"] or "readiness"
    resource = (f"from {short_task(w['details'].get('peer', ''))}" if w["kind"] == "recv"
                else w["resource"])
    return f"{label} {resource} {max(0.0, now - w['since']):.0f}s"


# -- following the chain ---------------------------------------------------------------------------
def diagnose(cluster, watcher, task: Optional[str] = None,
             started: Optional[float] = None) -> "Diagnosis":
    """The cluster's waits followed to a root cause (``task``: start from that task only).
    ``started``: when the caller began (time.monotonic()), e.g. before it made ``watcher``."""
    started = time.monotonic() if started is None else started
    spent = time.monotonic() - started
    watcher.flush(timeout=max(0.2, min(FRESH_POLL_S, ANSWER_S - spent)))
    view = _View(cluster, watcher.snapshot(), time.time())
    reports = []
    for name in view.tasks:
        state, reason = view.state[name]
        own = view.waits_of(name)
        lines = [_wait_text(view, w) for w in own]
        hosted = sorted({w["origin"] for w in view.waits
                         if w["where"] == name and w["origin"] not in (None, name)})
        if hosted:
            lines.append(f"holds blocked ops of {', '.join(hosted)}'s steps")
        reports.append(TaskReport(name, state, reason, lines,
                                  sorted({t for w in own for t in _waited_for(view, w)})))
    if task is not None:
        starts = [task]
    else:   # workers first: they run the steps; then whoever waits longest
        blocked = [t for t in view.tasks if view.waits_of(t)]
        starts = sorted(blocked, key=lambda t: (not t.startswith("worker:"),
                                                 min(w["since"] for w in view.waits_of(t))))
    chain: List[str] = []
    root = None
    for start in starts:
        chain, root = _follow(view, start)
        if root is not None:
            break
    if root is None:
        root = _no_waits(view, task)
    cause, root_task, fix = root
    return Diagnosis(reports, chain, cause, root_task, fix, time.monotonic() - started)


def _waited_for(view: _View, w: dict) -> List[str]:
    """The tasks whose progress would end wait ``w`` (one hop)."""
    if w["kind"] == "recv":
        return [short_task(w["details"].get("peer", ""))]
    if w["kind"] == "readiness":
        return [_chief(view)]
    if w["kind"] == "accumulator":
        return _missing_workers(view, w)
    if w["kind"] == "queue":
        return sorted({view.origin.get(s["step_id"], s["where"]) for s in _fillers(view, w)})
    return []


def _chief(view: _View) -> str:
    return "chief:0" if "chief:0" in view.tasks else "worker:0"


def _fillers(view: _View, w: dict) -> List[dict]:
    """The steps in flight (on the queue's task) whose plan enqueues to the queue of ``w``."""
    return [s for s in view.steps if s["where"] == w["where"]
            and any(f["kind"] == "queue" and f["resource"] == w["resource"] for f in s["fills"])]


def _missing_workers(view: _View, w: dict) -> List[str]:
    applied = {view.origin.get(step) for step in w["details"].get("applied_steps", ())}
    return [t for t in view.tasks if t.startswith("worker:") and t not in applied]


def _state_text(view: _View, task: str) -> str:
    state, reason = view.state[task]
    return f"{task} is {state}: {reason}" if reason else f"{task} is {state}"


def _fix_for(view: _View, task: str) -> str:
    return FIX_FROZEN if view.state[task][0] == "frozen" else FIX_DEAD


def _follow(view: _View, start: str) -> Tuple[List[str], Optional[tuple]]:
    """The chain from ``start``'s wait and (root cause, its task, fix), or None when the chain
    ends at a task that is not blocked."""
    chain: List[str] = []
    if view.dead_or_frozen(start):
        return chain, (f"{_state_text(view, start)}.", start, _fix_for(view, start))
    w = view.primary(view.waits_of(start))
    who = start
    seen = set()
    while w is not None and (w["where"], w["step_id"], w["resource"]) not in seen:
        seen.add((w["where"], w["step_id"], w["resource"]))
        chain.append(f"{who} waits in {_wait_text(view, w)}")
        kind = w["kind"]
        if kind == "recv":
            peer = short_task(w["details"].get("peer", ""))
            if view.dead_or_frozen(peer):
                chain.append(_state_text(view, peer))
                return chain, (f"{who}'s {w['type']} '{w['op']}' waits for a tensor from {peer}, "
                               f"and {_state_text(view, peer)}.", peer, _fix_for(view, peer))
            same_step = [x for x in view.waits if x["where"] == peer
                         and x["step_id"] == w["step_id"]]
            if not same_step:
                return chain, None   # the peer is not blocked in this step: still computing
            w = view.primary(same_step)
        elif kind == "queue" and "Dequeue" in (w["type"] or ""):
            fillers = _fillers(view, w)
            if not fillers:
                return chain, (f"{who} dequeues from {w['details'].get('queue_type', 'queue')} "
                               f"'{w['resource']}' on {w['where']}, which is empty, and no step "
                               "in flight enqueues to it.", w["where"], FIX_RUNNERS)
            filler = fillers[0]
            who = view.origin.get(filler["step_id"], filler["where"])
            steps_waits = [x for x in view.waits if x["step_id"] == filler["step_id"]]
            chain.append(f"'{w['resource']}' is filled by a step of {who} (its partition on "
                         f"{filler['where']} enqueues with {_fill_op(filler, w['resource'])})")
            if not steps_waits:
                return chain, None
            w = view.primary(steps_waits)
        elif kind == "accumulator":
            missing = _missing_workers(view, w)
            d = w["details"]
            chain.append(f"accumulator '{w['resource']}' has {d.get('received')} of "
                         f"{d.get('needed')} gradients this round; none yet from "
                         f"{', '.join(missing) or 'nobody known'}")
            gone = [t for t in missing if view.dead_or_frozen(t)]
            if gone:
                chain.append(_state_text(view, gone[0]))
                return chain, (f"{_state_text(view, gone[0])}; so accumulator "
                               f"'{w['resource']}' on {w['where']} has {d.get('received')} of "
                               f"the {d.get('needed')} gradients it needs, and {who}'s "
                               f"{w['type']} '{w['op']}' and every step waiting on it hang.",
                               gone[0], FIX_BACKUP)
            stuck = [t for t in missing if view.waits_of(t)]
            if not stuck:
                return chain, None
            who = stuck[0]
            w = view.primary(view.waits_of(who))
        elif kind == "readiness":
            chief = _chief(view)
            names = w["details"].get("uninitialized") or []
            chain.append(f"{who} waits for its chief {chief} to initialize the model")
            if view.dead_or_frozen(chief):
                chain.append(_state_text(view, chief))
                return chain, (f"{who} waits for the chief {chief} to initialize the model, "
                               f"and {_state_text(view, chief)}.", chief, _fix_for(view, chief))
            chief_waits = [x for x in view.waits_of(chief) if x is not w]
            if not chief_waits or any(x["kind"] == "readiness" for x in chief_waits):
                what = "also waits for the model" if chief_waits else "is not initializing it"
                return chain, (f"{who} waits for the model to be initialized ("
                               f"{len(names)} variables uninitialized: "
                               f"{', '.join(names[:3])}{', ...' if len(names) > 3 else ''}), "
                               f"but its chief {chief} {what}.", chief, FIX_CHIEF)
            who = chief
            w = view.primary(chief_waits)
        else:   # an enqueue to a full queue, a close
            return chain, (f"{who} waits in {_wait_text(view, w)}.", w["where"], "")
    return chain, None


def _fill_op(step: dict, resource: str) -> str:
    return next((f"'{f['op']}'" for f in step["fills"] if f["resource"] == resource), "?")


def _no_waits(view: _View, task: Optional[str]) -> tuple:
    gone = [t for t in view.tasks if view.dead_or_frozen(t)]
    if task is not None and not view.waits_of(task):
        return f"{task} is not blocked in any step.", task, ""
    if gone:
        return (f"{_state_text(view, gone[0])}; no step of the others waits on it.", gone[0],
                _fix_for(view, gone[0]))
    if view.waits:
        return ("the tasks wait on each other's steps, which are still running (not blocked).",
                None, "")
    return "no task is blocked in a step.", None, ""
