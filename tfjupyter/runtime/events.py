"""Runtime events as plain data, for widgets, experiment records and cluster telemetry.

``subscribe("placement", fn)`` gets a list of PlacementRecord each time a session places new
ops; ``subscribe("step", fn)`` gets a StepRecord after each Session.run; ``subscribe("summary",
fn)`` gets a SummaryRecord each time a scalar summary op's kernel runs; ``subscribe("trace",
fn)`` gets a TraceRecord after each traced Session.run; ``subscribe("sync", fn)`` gets a
SyncRecord each time a conditional accumulator hands out its gradients or drops a stale one.
Publishing costs one truth test when nobody listens.

Traced runs. A run is traced when its caller asks (``RunOptions(trace_level=FULL_TRACE)`` with
a ``run_metadata``) or, while someone listens to "trace", when it is sampled:
``request_traces(every)`` asks that one run in every ``every`` of each session be traced (the
runs whose number, ``StepRecord.step``, is a multiple of ``trace_every``, the smallest ``every``
among the active requests) until the function it returns is called. A sampled run leaves the
caller's run_metadata alone. A TraceRecord's ``dev_stats`` is the run's
``runtime.executor.StepStats.dev_stats``: device name -> [{"node_name", "op",
"all_start_micros", "op_end_rel_micros"}], one entry per op that ran (aliases and NoOps do
not run).

Sync records (SyncReplicasOptimizer's accumulators): a take of ``n`` gradients at the
accumulator's global step ``s`` publishes ``SyncRecord(name, step=s, applied=n, dropped=0)``; a
stale gradient (computed at ``local_step`` < the accumulator's global step) is dropped and
publishes ``SyncRecord(name, step=local_step, applied=0, dropped=1)``. Per global step, the
gradients aggregated are the largest ``applied`` over the accumulators, the gradients dropped
the largest per-accumulator sum of ``dropped``.

What a StepRecord counts (decided once per cached plan, when Session.run compiles it):

* ``examples`` — the examples the step processed, i.e. the leading dimension of its batch:

  (a) the explicit override, if the graph has one: ``tf.train.set_examples_per_step(n)`` (an
      int: every step of the graph counts ``n``) or ``set_examples_per_step(tensor)`` (a scalar
      tensor: its value, when the step feeds it, fetches it or computes it anyway);
  (b) else the leading dimension of the first fed value (feeds in graph order) whose
      placeholder's static leading dimension is unknown (``[None, 64]``), or, failing that,
      of the first fed value of rank >= 1;
  (c) else the leading dimension of the first output of the first QueueDequeueManyV2 /
      QueueDequeueUpToV2 / IteratorGetNext op the step ran in this process (a distributed
      session's partitions on tasks this process serves included, as a notebook cluster's
      worker's); an IteratorGetNext whose element is not a batch (``ops.data_ops.
      element_is_batch``: its dataset was never batched) took one example, as TensorFlow's
      ``get_next()`` of an unbatched dataset yields one;
  (d) else 0, which means unknown.

* ``global_step`` — the value of the graph's global step (``tf.train.get_global_step()``, the
  ``global_step`` collection or the tensor ``global_step:0``) when the step fetched it, its
  ``read`` snapshot, an Identity of it, or the hooks' shared read (``global_step/add``); None
  when the step did not fetch it.
"""
from __future__ import annotations

import itertools
import numbers
import threading
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

__all__ = ["PlacementRecord", "StepRecord", "SummaryRecord", "TraceRecord", "SyncRecord",
           "subscribe", "unsubscribe", "publish", "listeners", "step_record", "request_traces"]


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


@dataclass(frozen=True)
class TraceRecord:
    session_id: int
    step: int              # the session's run count, as StepRecord.step
    wall_time: float       # seconds since the epoch at the end of the run
    duration: float        # seconds the run took
    global_step: Optional[int]  # the global step's value, if the step fetched it
    dev_stats: Dict[str, List[dict]]  # StepStats.dev_stats of the run


@dataclass(frozen=True)
class SyncRecord:
    accumulator: str       # the accumulator's (shared) name
    step: int              # the global step the gradients were computed at / taken for
    applied: int           # gradients aggregated by a take; 0 in a drop record
    dropped: int           # stale gradients dropped; 0 in a take record
    wall_time: float       # seconds since the epoch


listeners: Dict[str, List[Callable]] = {"placement": [], "step": [], "summary": [], "trace": [],
                                        "sync": []}

# The smallest ``every`` of the active request_traces() requests, 0 when none. Session.run reads
# it on every run, so it is a plain module global, kept current under _trace_lock.
trace_every: int = 0
_trace_requests: Dict[int, int] = {}   # request id -> every
_trace_ids = itertools.count(1)
_trace_lock = threading.Lock()


def request_traces(every: int) -> Callable[[], None]:
    """Asks that one Session.run in every ``every`` be traced (while "trace" has listeners);
    returns the function that withdraws the request (calling it again does nothing)."""
    if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every <= 0:
        raise ValueError(f"request_traces: every must be a positive int, got {every!r}")
    global trace_every
    with _trace_lock:
        request = next(_trace_ids)
        _trace_requests[request] = int(every)
        trace_every = min(_trace_requests.values())

    def release() -> None:
        global trace_every
        with _trace_lock:
            if _trace_requests.pop(request, None) is not None:
                trace_every = min(_trace_requests.values(), default=0)
    return release


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
