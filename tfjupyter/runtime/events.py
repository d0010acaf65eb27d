"""Runtime events as plain data, for widgets, experiment records and cluster telemetry.

``subscribe("placement", fn)`` gets a list of PlacementRecord each time a session places new
ops; ``subscribe("step", fn)`` gets a StepRecord after each Session.run; ``subscribe("summary",
fn)`` gets a SummaryRecord each time a scalar summary op's kernel runs. Publishing costs one
truth test when nobody listens.

What a StepRecord counts (decided once per cached plan, when Session.run compiles it):

* ``examples`` — the examples the step processed, i.e. the leading dimension of its batch:

  (a) the explicit override, if the graph has one: ``tf.train.set_examples_per_step(n)`` (an
      int: every step of the graph counts ``n``) or ``set_examples_per_step(tensor)`` (a scalar
      tensor: its value, when the step feeds it, fetches it or computes it anyway);
  (b) else the leading dimension of the first fed value (feeds in graph order) whose
      placeholder's static leading dimension is unknown (``[None, 64]``), or, failing that,
      of the first fed value of rank >= 1;
  (c) else, for local (not distributed) sessions, the leading dimension of the first output
      of the first QueueDequeueManyV2 / QueueDequeueUpToV2 op the step ran;
  (d) else 0, which means unknown.

* ``global_step`` — the value of the graph's global step (``tf.train.get_global_step()``, the
  ``global_step`` collection or the tensor ``global_step:0``) when the step fetched it, its
  ``read`` snapshot, an Identity of it, or the hooks' shared read (``global_step/add``); None
  when the step did not fetch it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

__all__ = ["PlacementRecord", "StepRecord", "SummaryRecord", "subscribe", "unsubscribe",
           "publish", "listeners", "step_record"]


@dataclass(frozen=True)
class PlacementRecord:
    op: str
    type: str
    requested: str
    assigned: str
    reason: str


@dataclass(frozen=True)
class StepRecord:
    session_id: int
    step: int
    wall_time: float       # seconds since the epoch at the end of the run
    duration: float        # seconds the run took
    fetches: int
    ops_run: int
    examples: int = 0      # examples the step processed (the batch's leading dim); 0 = unknown
    global_step: Optional[int] = None  # the global step's value, if the step fetched it


_new = object.__new__


def step_record(session_id: int, step: int, wall_time: float, duration: float, fetches: int,
                ops_run: int, examples: int = 0, global_step: Optional[int] = None) -> StepRecord:
    """``StepRecord(...)``, made without the frozen dataclass's per-field ``__setattr__``
    (Session.run's hot path: 2-3x cheaper). The result is an ordinary StepRecord."""
    record = _new(StepRecord)
    record.__dict__.update(session_id=session_id, step=step, wall_time=wall_time,
                           duration=duration, fetches=fetches, ops_run=ops_run,
                           examples=examples, global_step=global_step)
    return record


@dataclass(frozen=True)
class SummaryRecord:
    tag: str
    value: float
    wall_time: float       # seconds since the epoch when the summary op ran


listeners: Dict[str, List[Callable]] = {"placement": [], "step": [], "summary": []}


def subscribe(kind: str, fn: Callable) -> Callable:
    if kind not in listeners:
        raise ValueError(f"Unknown event kind {kind!r}; known: {', '.join(listeners)}")
    listeners[kind].append(fn)
    return fn


def unsubscribe(kind: str, fn: Callable) -> None:
    if fn in listeners.get(kind, ()):
        listeners[kind].remove(fn)


def publish(kind: str, payload) -> None:
    for fn in list(listeners[kind]):
        fn(payload)
