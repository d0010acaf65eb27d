"""The cluster's status table (HTML in Jupyter, text in a terminal)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Dict, List, Optional

from ..framework.device import local_device
from ..tables import html_table, text_table
from .diagnose import waiting_in

__all__ = ["StatusRow", "StatusTable", "RECENT_STEP_S", "alive_state"]

RECENT_STEP_S = 2.0   # a task that stepped this recently counts as running

HEADER = ("task", "engine", "host", "pid", "address", "devices", "state", "global step",
          "steps/s", "examples/s", "waiting in", "restarts")


@dataclass
class StatusRow:
    task: str
    engine: int
    host: str
    pid: int
    address: str
    devices: str
    state: str             # starting, idle, running, dead
    global_step: Optional[int]
    steps_per_sec: float
    examples_per_sec: float
    error: str = ""
    waiting: str = ""      # what its step is blocked in (diagnose.waiting_in), "" if nothing
    restarts: int = 0      # by the cluster (Cluster(restart=True))

    def cells(self) -> List[str]:
        return [self.task, str(self.engine), self.host, str(self.pid), self.address, self.devices,
                self.state + (f" ({self.error})" if self.error else ""),
                "" if self.global_step is None else str(self.global_step),
                f"{self.steps_per_sec:.1f}", f"{self.examples_per_sec:.0f}", self.waiting,
                str(self.restarts)]


def alive_state(last_step_time: Optional[float], busy: bool = False,
                now: Optional[float] = None) -> str:
    """"running" or "idle", for a task that answers its telemetry polls.

    Running while a cell runs on it (``busy``) or when its last step (``last_step_time``, by
    ``time.time()``) ended less than RECENT_STEP_S ago; the status table and the cluster panel
    both decide this way.
    """
    now = time.time() if now is None else now
    recent = last_step_time is not None and now - last_step_time < RECENT_STEP_S
    return "running" if busy or recent else "idle"


def describe_devices(devices: List[dict]) -> str:
    parts = []
    for d in devices:
        short = local_device(d["name"])
        if d.get("type") == "GPU":
            gpu = d.get("description", "").partition("name: ")[2].partition(",")[0]
            memory = d.get("memory_bytes")
            short += f" ({gpu}{f', {memory / 2**30:.0f} GiB' if memory else ''})"
        parts.append(short)
    return ", ".join(parts)


class StatusTable:
    def __init__(self, rows: List[StatusRow], caption: str):
        self.rows = rows
        self.caption = caption

    @classmethod
    def of(cls, cluster, snapshot: Dict) -> "StatusTable":
        busy = cluster.busy_tasks()
        now = time.time()
        engine_ids = set(cluster.client.ids)
        rows = []
        for task in cluster.tasks:
            seen = snapshot.get(task.device_name)
            state, error = "starting", ""
            global_step, steps, examples = None, 0.0, 0.0
            if seen is not None:
                global_step = seen.global_step
                steps, examples = seen.steps_per_sec or 0.0, seen.examples_per_sec or 0.0
                if seen.state == "dead":
                    state, error = "dead", seen.error or ""
                elif seen.state == "alive":
                    state = alive_state(seen.last_step_time, task.name in busy, now)
            if task.engine_id not in engine_ids and state != "dead":
                state, error = "dead", "its engine left the ipyparallel cluster"
            if task.note:   # the cluster knows more: restarting, or why it stays dead
                state, error = "dead", task.note
            rows.append(StatusRow(task.name, task.engine_id, task.host, task.pid, task.address,
                                  describe_devices(task.devices), state, global_step, steps,
                                  examples, error,
                                  waiting_in(task.name, snapshot) if state != "dead" else "",
                                  task.restarts))
        total = sum(r.examples_per_sec for r in rows)
        caption = (f"tfjupyter cluster on {cluster.engines!r} engines: "
                   f"{sum(r.state != 'dead' for r in rows)}/{len(rows)} tasks up, "
                   f"{total:.0f} examples/s in all")
        return cls(rows, caption)

    def row(self, task: str) -> StatusRow:
        for r in self.rows:
            if r.task == task:
                return r
        raise KeyError(task)

    def __str__(self) -> str:
        return "\n".join([self.caption] + text_table(HEADER, [r.cells() for r in self.rows]))

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return html_table(self.caption, HEADER, [r.cells() for r in self.rows])
