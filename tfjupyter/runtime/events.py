"""Runtime events as plain data, for widgets and experiment records to stream.

``subscribe("placement", fn)`` gets a list of PlacementRecord each time a session places new
ops; ``subscribe("step", fn)`` gets a StepRecord after each Session.run. Publishing costs one
truth test when nobody listens.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List

__all__ = ["PlacementRecord", "StepRecord", "subscribe", "unsubscribe", "publish", "listeners"]


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


listeners: Dict[str, List[Callable]] = {"placement": [], "step": []}


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
