"""The dashboard's model: events in from any thread, coalesced updates out, bounded memory.

Sources (runtime.events listeners on the training thread, telemetry watchers on theirs) call the
``on_*`` methods; each only appends a tuple to a deque, so a training loop pays well under a
microsecond per event. The pump (one thread: the kernel's IO loop, or the text printer) calls
``drain()`` at most ``max_rate`` times a second; it turns everything that arrived since the last
drain into one ``Update`` — a few rows per panel — and keeps only bounded state: steps inside
the rate window, the latest trace, the last ``SYNC_STEPS`` sync steps, one row per task.

Rates follow the telemetry rule (distributed/telemetry.py ``TaskStatus``): the steps that ended
in the last ``window`` seconds of the task's clock, divided by the window or by the time since
the first of them began when that is shorter; a step is a run that carried a batch (examples >
0), or any run when none of the window's runs did.
"""
from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field
from typing import Deque, Dict, List, Optional, Tuple

from ..framework.device import local_device

__all__ = ["Feed", "Update", "TaskRow", "TOTAL", "SYNC_STEPS", "is_soft_placed"]

TOTAL = "total"          # the throughput line summing every task
SYNC_STEPS = 200         # global steps the sync panel shows
TRACE_OPS = 5000         # op segments kept from one traced step
TRACE_SHOW_EVERY = 2.0   # seconds between timeline redraws
MAX_POINTS_PER_DRAIN = 50  # summary points per tag and task per sample (a loss every step of
                           # 2000 steps/s is noise on a plot; TensorBoard samples too)


def is_soft_placed(reason: str) -> bool:
    return reason.startswith("soft placement")


@dataclass
class TaskRow:
    """One row of the cluster-health table."""
    task: str
    state: str = "alive"            # alive, dead, unknown
    host: str = ""
    devices: str = ""
    global_step: Optional[int] = None
    examples_per_sec: float = 0.0
    steps_per_sec: float = 0.0
    mean_examples_per_sec: float = 0.0   # over the task's training so far (first to last step)
    cpu_percent: Optional[float] = None
    rss_mb: Optional[float] = None
    error: str = ""
    waiting: str = ""               # what its step is blocked in (cluster.diagnose.waiting_in)
    restarts: int = 0               # by its cluster (Cluster(restart=True))


@dataclass
class Update:
    """What changed since the previous drain. Column dicts are ready for
    ``ColumnDataSource.stream``; ``None`` means the panel did not change."""
    time: float                                             # wall clock of the drain (s)
    throughput: Dict[str, dict] = field(default_factory=dict)   # task -> {t, examples, steps}
    scalars: Dict[str, Dict[str, dict]] = field(default_factory=dict)  # tag -> task -> {step, value}
    placement: Optional[dict] = None                         # new rows
    device_counts: Optional[Dict[str, int]] = None           # every device's op count so far
    trace: Optional[dict] = None                             # the latest traced step's segments
    sync: Optional[dict] = None                              # the last SYNC_STEPS steps
    health: Optional[List[TaskRow]] = None                   # every task, when any changed
    events: int = 0                                          # raw events folded in

    def __bool__(self) -> bool:
        return bool(self.throughput or self.scalars or self.placement or self.trace
                    or self.sync or self.health or self.device_counts)


class _TaskSteps:
    """The recent steps of one task, and its clock (task time, our time) at the last one."""

    __slots__ = ("steps", "clock", "global_step", "count", "examples", "first_start",
                 "last_end")

    def __init__(self):
        self.steps: Deque[Tuple[float, float, int]] = collections.deque()  # end, duration, examples
        self.clock: Optional[Tuple[float, float]] = None
        self.global_step: Optional[int] = None
        self.count = 0
        self.examples = 0
        self.first_start: Optional[float] = None
        self.last_end = 0.0

    def mean_examples_per_sec(self) -> float:
        if self.first_start is None or self.last_end <= self.first_start:
            return 0.0
        return self.examples / (self.last_end - self.first_start)


class Feed:
    """Thread-safe event intake; ``drain()`` from one thread only.

    ``window``: seconds the rates average; ``sample_every``: seconds between throughput points.
    """

    def __init__(self, window: float = 5.0, sample_every: float = 0.25,
                 clock=time.time, monotonic=time.monotonic):
        if window <= 0 or sample_every <= 0:
            raise ValueError("Feed: window and sample_every must be positive")
        self.window = float(window)
        self.sample_every = float(sample_every)
        self._clock, self._monotonic = clock, monotonic
        self._inbox: Deque[tuple] = collections.deque()   # appends and pops are atomic
        self._tasks: Dict[str, _TaskSteps] = {}
        self._rows: Dict[str, TaskRow] = {}
        self._rows_changed = False
        self._device_counts: Dict[str, int] = {}
        self._placed: set = set()                         # (task, op) already listed
        self._task_devices: Dict[str, set] = {}           # task -> devices its ops were placed on
        self._sync: Dict[int, List[int]] = {}             # step -> [aggregated, dropped]
        self._sync_parts: Dict[Tuple[int, str], List[int]] = {}   # (step, accumulator) -> same
        self._next_sample = 0.0
        self._trace: Optional[tuple] = None               # the latest trace not shown yet
        self._next_trace = 0.0
        self.last_scalars: Dict[str, Dict[str, Tuple[int, float]]] = {}  # tag -> task -> last
        self._pending_scalars: Dict[str, Dict[str, dict]] = {}  # points since the last sample
        self.soft_placed = 0
        self._had_steps: set = set()                      # tasks that ever stepped
        self.events = 0

    # -- intake (any thread) -------------------------------------------------------------------
    def on_step(self, task: str, end: float, duration: float, examples: int,
                global_step: Optional[int]) -> None:
        self._inbox.append(("step", task, end, duration, examples, global_step,
                            self._monotonic()))

    def on_placement(self, task: str, op: str, type_: str, requested: str, assigned: str,
                     reason: str) -> None:
        self._inbox.append(("placement", task, op, type_, requested, assigned, reason))

    def on_summary(self, task: str, tag: str, value: float, global_step: Optional[int]) -> None:
        self._inbox.append(("summary", task, tag, value, global_step))

    def on_trace(self, task: str, step: int, global_step: Optional[int], duration: float,
                 dev_stats: Dict[str, List[dict]]) -> None:
        self._inbox.append(("trace", task, step, global_step, duration, dev_stats))

    def on_sync(self, task: str, accumulator: str, step: int, applied: int, dropped: int) -> None:
        self._inbox.append(("sync", task, accumulator, step, applied, dropped))

    def on_health(self, row: TaskRow) -> None:
        """The task's state, host, devices... (rates and global step are the feed's own)."""
        self._inbox.append(("health", row))

    # -- the pump's side (one thread) --------------------------------------------------------------
    def drain(self, force_sample: bool = False) -> Update:
        now_wall, now = self._clock(), self._monotonic()
        update = Update(time=now_wall)
        placement: Dict[str, list] = {}
        sync_changed = False
        latest_trace = None
        inbox = self._inbox
        # Only what is there now: a training thread appends as fast as this drains, and a drain
        # that chased it would never end.
        for _ in range(len(inbox)):
            item = inbox.popleft()
            update.events += 1
            kind = item[0]
            if kind == "step":
                self._take_step(*item[1:])
            elif kind == "placement":
                self._take_placement(item[1:], placement)
            elif kind == "summary":
                self._take_summary(*item[1:])
            elif kind == "trace":
                latest_trace = item[1:]
            elif kind == "sync":
                sync_changed |= self._take_sync(*item[2:])
            elif kind == "health":
                self._take_health(item[1])
        self.events += update.events
        if placement:
            update.placement = placement
            update.device_counts = dict(self._device_counts)
        if latest_trace is not None:
            self._trace = latest_trace
        if self._trace is not None and (force_sample or now >= self._next_trace):
            # The timeline shows one step; redrawing it for each of 20 traces a second (fast
            # steps, every 100th traced) would cost more than the training it shows.
            update.trace = _trace_columns(*self._trace)
            self._trace = None
            self._next_trace = now + TRACE_SHOW_EVERY
        if sync_changed:
            update.sync = self._sync_columns()
        sampled = force_sample or now >= self._next_sample
        if sampled:
            # Throughput points, summary points and health rows go out together, every
            # sample_every: most of a dashboard's cost is per update, not per point.
            self._next_sample = now + self.sample_every
            self._sample(update, now_wall, now)
            update.scalars = {tag: {task: _thin(columns, MAX_POINTS_PER_DRAIN)
                                    for task, columns in per_task.items()}
                              for tag, per_task in self._pending_scalars.items()}
            self._pending_scalars = {}
        if self._rows_changed and (sampled or not self._had_steps):
            self._rows_changed = False
            update.health = [self._row_out(r) for r in self._rows.values()]
        return update

    def rates(self, task: str, now: Optional[float] = None) -> Tuple[float, float]:
        """(steps/s, examples/s) of ``task`` now (0, 0 for an unknown or dead task)."""
        steps = self._tasks.get(task)
        row = self._rows.get(task)
        if steps is None or steps.clock is None or (row is not None and row.state == "dead"):
            return 0.0, 0.0
        now = self._monotonic() if now is None else now
        task_now = steps.clock[0] + (now - steps.clock[1])
        start = task_now - self.window
        while steps.steps and steps.steps[0][0] <= start:
            steps.steps.popleft()
        if not steps.steps:
            return 0.0, 0.0
        first_start = steps.steps[0][0] - steps.steps[0][1]
        span = max(1e-6, min(self.window, task_now - first_start))
        batches = sum(1 for s in steps.steps if s[2])
        examples = sum(s[2] for s in steps.steps)
        return (batches or len(steps.steps)) / span, examples / span

    def global_step(self, task: str) -> Optional[int]:
        steps = self._tasks.get(task)
        return steps.global_step if steps is not None else None

    @property
    def tasks(self) -> List[str]:
        return sorted(set(self._tasks) | set(self._rows))

    def rows(self) -> List[TaskRow]:
        """The health table as of the last drain."""
        return [self._row_out(r) for r in self._rows.values()]

    @property
    def device_counts(self) -> Dict[str, int]:
        return dict(self._device_counts)

    # -- folding events in -------------------------------------------------------------------------
    def _task(self, task: str) -> _TaskSteps:
        steps = self._tasks.get(task)
        if steps is None:
            steps = self._tasks[task] = _TaskSteps()
        return steps

    def _take_step(self, task, end, duration, examples, global_step, received) -> None:
        steps = self._task(task)
        steps.steps.append((end, duration, examples))
        steps.count += 1
        steps.examples += examples
        if steps.first_start is None:
            steps.first_start = end - duration
        steps.last_end = max(steps.last_end, end)
        if steps.clock is None or end >= steps.clock[0]:
            steps.clock = (end, received)
        if global_step is not None:
            steps.global_step = global_step
        self._had_steps.add(task)
        row = self._rows.get(task)
        if row is None:
            self._rows[task] = TaskRow(task=task)
            self._rows_changed = True

    def _take_placement(self, item, placement: Dict[str, list]) -> None:
        task, op, type_, requested, assigned, reason = item
        if (task, op) in self._placed:
            return   # a session placing the same graph again (a new session, a restart)
        self._placed.add((task, op))
        row = (task, op, type_, requested, assigned, reason, is_soft_placed(reason))
        for key, value in zip(("task", "op", "type", "requested", "assigned", "reason", "soft"),
                              row):
            placement.setdefault(key, []).append(value)
        self._device_counts[assigned] = self._device_counts.get(assigned, 0) + 1
        self.soft_placed += row[-1]
        seen = self._task_devices.setdefault(task, set())
        if assigned not in seen:
            seen.add(assigned)
            self._rows_changed |= task in self._rows and not self._rows[task].devices

    def _take_summary(self, task, tag, value, global_step) -> None:
        if global_step is None:
            steps = self._tasks.get(task)
            global_step = (steps.global_step if steps is not None and steps.global_step is not None
                           else steps.count if steps is not None else 0)
        columns = self._pending_scalars.setdefault(tag, {}).setdefault(
            task, {"step": [], "value": []})
        columns["step"].append(global_step)
        columns["value"].append(float(value))
        self.last_scalars.setdefault(tag, {})[task] = (global_step, float(value))

    def _take_sync(self, accumulator, step, applied, dropped) -> bool:
        if self._sync and step < max(self._sync) - SYNC_STEPS:
            return False   # far too late to show
        part = self._sync_parts.setdefault((step, accumulator), [0, 0])
        part[0] = max(part[0], applied)
        part[1] += dropped
        totals = self._sync.setdefault(step, [0, 0])
        totals[0], totals[1] = max(totals[0], part[0]), max(totals[1], part[1])
        if len(self._sync) > SYNC_STEPS:
            oldest = sorted(self._sync)[:len(self._sync) - SYNC_STEPS]
            for s in oldest:
                del self._sync[s]
            self._sync_parts = {k: v for k, v in self._sync_parts.items() if k[0] in self._sync}
        return True

    def _sync_columns(self) -> dict:
        steps = sorted(self._sync)
        return {"step": steps, "aggregated": [self._sync[s][0] for s in steps],
                "dropped": [self._sync[s][1] for s in steps]}

    def _row_out(self, row: TaskRow) -> TaskRow:
        out = TaskRow(**vars(row))
        steps = self._tasks.get(row.task)
        if steps is not None:
            out.mean_examples_per_sec = steps.mean_examples_per_sec()
        if not out.devices:   # a local task: the devices its ops were placed on
            out.devices = ", ".join(sorted(local_device(d)
                                           for d in self._task_devices.get(row.task, ())))
        return out

    def _take_health(self, row: TaskRow) -> None:
        old = self._rows.get(row.task)
        merged = TaskRow(**vars(row))
        if old is not None:
            merged.examples_per_sec, merged.steps_per_sec = old.examples_per_sec, old.steps_per_sec
            merged.global_step = row.global_step if row.global_step is not None else old.global_step
        if old is None or vars(old) != vars(merged):
            self._rows[row.task] = merged
            self._rows_changed = True

    def _sample(self, update: Update, now_wall: float, now: float) -> None:
        t_ms = now_wall * 1000.0
        total_examples = total_steps = 0.0
        for task in sorted(self._had_steps):
            steps_per_sec, examples_per_sec = self.rates(task, now)
            total_examples += examples_per_sec
            total_steps += steps_per_sec
            update.throughput[task] = {"t": [t_ms], "examples": [examples_per_sec],
                                       "steps": [steps_per_sec]}
            row = self._rows.get(task)
            global_step = self._tasks[task].global_step
            if row is not None and (row.examples_per_sec, row.steps_per_sec) != (
                    examples_per_sec, steps_per_sec):
                row.examples_per_sec, row.steps_per_sec = examples_per_sec, steps_per_sec
                if global_step is not None and (row.global_step or -1) < global_step:
                    row.global_step = global_step
                self._rows_changed = True
        if self._had_steps:
            update.throughput[TOTAL] = {"t": [t_ms], "examples": [total_examples],
                                        "steps": [total_steps]}


def _thin(columns: Dict[str, list], most: int) -> Dict[str, list]:
    """Every k-th point so that at most ``most`` remain, always keeping the last one."""
    n = len(columns["step"])
    if n <= most:
        return columns
    stride = -(-n // most)
    keep = list(range(n - 1, -1, -stride))[::-1]
    return {k: [v[i] for i in keep] for k, v in columns.items()}


def _trace_columns(task: str, step: int, global_step: Optional[int], duration: float,
                   dev_stats: Dict[str, List[dict]]) -> dict:
    """One traced step as timeline segments: one lane per device, times in ms from the step's
    first op (Chrome-trace style)."""
    entries = [(device, s) for device, stats in dev_stats.items() for s in stats][:TRACE_OPS]
    origin = min((s["all_start_micros"] for _, s in entries), default=0)
    cols: Dict[str, list] = {"device": [], "op": [], "type": [], "start": [], "end": [],
                             "duration_us": []}
    for device, s in entries:
        start = (s["all_start_micros"] - origin) / 1000.0
        length = max(s["op_end_rel_micros"], 0)
        cols["device"].append(device)
        cols["op"].append(s["node_name"])
        cols["type"].append(s.get("op", ""))
        cols["start"].append(start)
        cols["end"].append(start + max(length, 1) / 1000.0)   # a 0 us op stays visible
        cols["duration_us"].append(length)
    return {"task": task, "step": step, "global_step": global_step, "duration": duration,
            "devices": sorted(dev_stats), "columns": cols}
