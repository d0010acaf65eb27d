"""Where a dashboard's events come from: this process's sessions, or a cluster's telemetry.

Both adapters only translate and append to the Feed (no Bokeh, no widgets): they run on the
training thread (runtime.events listeners) and on the watcher's thread (telemetry callbacks).
"""
from __future__ import annotations

import socket
from typing import Callable, Dict, Optional

from ..cluster.diagnose import waiting_in
from ..framework.device import local_device, short_task
from ..runtime import events
from .feed import Feed, TaskRow

__all__ = ["LocalSource", "ClusterSource", "LOCAL"]

LOCAL = "local"   # the task name of this process's own sessions


class LocalSource:
    """This process's Session.run steps, placements, summaries, traces and sync records.

    With ``session``, only that session's steps, traces and placements (summaries and sync
    records are the process's: their kernels do not know which session ran them).
    """

    def __init__(self, feed: Feed, session=None, trace_every: int = 0):
        self.feed = feed
        self.session = session
        self._listeners = [("step", self._on_step), ("placement", self._on_placement),
                           ("summary", self._on_summary), ("trace", self._on_trace),
                           ("sync", self._on_sync)]
        for kind, fn in self._listeners:
            events.subscribe(kind, fn)
        self._release = events.request_traces(trace_every) if trace_every else None
        devices = ", ".join(local_device(d.name) for d in session.devices) \
            if session is not None else ""
        feed.on_health(TaskRow(task=LOCAL, host=socket.gethostname(), devices=devices))

    @property
    def finished(self) -> bool:
        """True once the followed session is closed (never for the whole process)."""
        return self.session is not None and self.session.closed

    def close(self) -> None:
        for kind, fn in self._listeners:
            events.unsubscribe(kind, fn)
        if self._release is not None:
            self._release()
            self._release = None

    def _mine(self, session_id: int) -> bool:
        return self.session is None or session_id == self.session.id

    def _on_step(self, r: events.StepRecord) -> None:
        if self._mine(r.session_id):
            self.feed.on_step(LOCAL, r.wall_time, r.duration, r.examples, r.global_step)

    def _on_placement(self, records) -> None:
        # Records carry no session; the followed session's placer holds the very objects.
        mine = {id(r) for r in self.session.placer.records.values()} \
            if self.session is not None else None
        for r in records:
            if mine is None or id(r) in mine:
                self.feed.on_placement(LOCAL, r.op, r.type, r.requested, r.assigned, r.reason)

    def _on_summary(self, r: events.SummaryRecord) -> None:
        self.feed.on_summary(LOCAL, r.tag, r.value, None)

    def _on_trace(self, r) -> None:
        if self._mine(r.session_id):
            self.feed.on_trace(LOCAL, r.step, r.global_step, r.duration, r.dev_stats)

    def _on_sync(self, r) -> None:
        self.feed.on_sync(LOCAL, r.accumulator, r.step, r.applied, r.dropped)


class ClusterSource:
    """A telemetry Watcher's events. ``owned``: the watcher is closed with the source."""

    def __init__(self, feed: Feed, watcher, owned: bool = True, label: Optional[str] = None,
                 restarts: Optional[Callable[[], Dict[str, int]]] = None):
        self.feed = feed
        self.restarts = restarts   # task -> restarts so far, when the source is a Cluster
        self.watcher = watcher
        self.owned = owned
        self.label = label
        self.finished = False
        watcher.add_callback(self._on_event)
        snapshot = watcher.snapshot()
        for name, status in snapshot.items():
            self._health(name, status, snapshot)

    def close(self) -> None:
        # One last reading of every task goes into the final snapshot: the polls in flight may
        # be seconds old on a loaded host, so a ps's global step would read tens of steps
        # behind the workers' (bounded: a task that does not answer in 3 s is left as it was).
        self.watcher.flush(timeout=3.0)
        self.watcher.remove_callback(self._on_event)
        if self.owned:
            self.watcher.close()

    def _on_event(self, event) -> None:
        kind, data, task = event.kind, event.data, short_task(event.task)
        if kind == "step":
            self.feed.on_step(task, event.time, data.get("duration", 0.0),
                              data.get("examples", 0), data.get("global_step"))
        elif kind == "placement":
            self.feed.on_placement(task, data["op"], data["type"], data["requested"],
                                   data["assigned"], data["reason"])
        elif kind == "summary":
            self.feed.on_summary(task, data["tag"], data["value"], data.get("global_step"))
        elif kind == "trace":
            self.feed.on_trace(task, data.get("step", 0), data.get("global_step"),
                               data.get("duration", 0.0), data.get("dev_stats", {}))
        elif kind == "sync":
            self.feed.on_sync(task, data["accumulator"], data["step"], data["applied"],
                              data["dropped"])
        elif kind in ("health", "alive", "dead", "error"):
            snapshot = self.watcher.snapshot()
            status = snapshot.get(event.task)
            if status is not None:
                self._health(event.task, status, snapshot)

    def _health(self, name: str, status, snapshot) -> None:
        health = status.health or {}
        rss = health.get("rss_bytes")
        devices = ", ".join(local_device(d.get("name", "")) for d in status.devices)
        self.feed.on_health(TaskRow(
            task=short_task(name), state=status.state, host=status.host or "",
            devices=devices, global_step=status.global_step,
            cpu_percent=health.get("cpu_percent"),
            rss_mb=round(rss / 2**20, 1) if rss else None, error=status.error or "",
            waiting=waiting_in(short_task(name), snapshot) if status.state == "alive" else "",
            restarts=self.restarts().get(short_task(name), 0) if self.restarts else 0))
