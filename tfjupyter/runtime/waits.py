"""What this process's threads are blocked in, and the steps it has in flight.

``%tf_cluster why`` (cluster/diagnose.py) explains a hung cluster from these two lists, which
every task's telemetry poll carries (distributed/telemetry.py: ``waits``, ``steps_in_flight``).

**Waits.** A kernel that may block describes, once when it is built, where it would wait: a
``Blocked`` (kind, the op's ``OpSite``, the resource's name and a function describing the
resource *when read*: a queue's size, an accumulator's count). Only a thread that actually
blocks registers it (``cancellation.wait_until(..., blocked=...)`` or ``with blocking(...)``),
so the fast path pays nothing. Kinds and their ``details``:

* ``queue`` (enqueue, dequeue, close): queue_type, size, capacity (None: unbounded), closed,
  blocked_enqueues, blocked_dequeues;
* ``accumulator`` (take_grad): received, needed, global_step and ``applied_steps`` (the step
  ids whose gradients it holds this round: the diagnosis finds the tasks that run them);
* ``recv`` (``_Recv``, in the local rendezvous or a RecvTensor stream): key, peer (the task of
  the sender), transfer ("push" or "pull");
* ``readiness`` (SessionManager's wait for a model the chief initializes): uninitialized (the
  variables still uninitialized at the last check), message, master.

**Steps in flight.** ``step_running(...)`` marks a step while it runs here: ``partition`` (a
graph partition run by this task's worker service for a master, local or remote) or ``session``
(a Session.run of a master in this process, the step's origin). Each lists what its plan would
``fill``: the queues it enqueues to and the accumulators it applies gradients to (read when
asked, from the plan's ops), so a dequeue that waits can be followed to the step that would
feed it. Step ids are shared by every partition of a step, so a partition's origin is the task
whose process runs the ``session`` step of that id.

Resources are named by ``resource_label``: the shared_name of the op that makes them, else that
op's name (between-graph replicas build the same names, so the label is the same everywhere).
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import time
import weakref
from typing import Callable, Dict, Iterator, List, Optional

__all__ = ["OpSite", "Blocked", "blocking", "step_running", "waits", "steps_in_flight",
           "resource_label", "FILL_TYPES"]

# The ops whose step fills a resource another step may wait on: what each fills.
FILL_TYPES = {"QueueEnqueueV2": "queue", "QueueEnqueueManyV2": "queue",
              "AccumulatorApplyGradient": "accumulator"}


class OpSite(str):
    """The text a kernel appends to its errors ("\\n\\t [[node NAME (TYPE) on DEVICE]]"), that
    also carries the op's name, type and device (and the label of its resource, if any) for
    wait records. Built once per kernel; being a str, it goes wherever the text went."""

    def __new__(cls, op: str, type: str, device: str, resource: str = ""):
        site = super().__new__(cls, f"\n\t [[node {op} ({type}) on {device}]]")
        site.op, site.type, site.device, site.resource = op, type, device, resource
        return site


def resource_label(src) -> str:
    """The name a resource made by op ``src`` (a queue, an accumulator) is known by."""
    try:
        shared = src.get_attr("shared_name")
    except (KeyError, ValueError):
        shared = ""
    return shared or src.name


class Blocked:
    """Where a kernel would wait: ``kind`` (see the module docstring), its ``site`` (OpSite, or
    None for a wait outside any op), the ``resource`` name, and ``details()`` -> dict, read live
    whenever telemetry asks."""
    __slots__ = ("kind", "site", "resource", "details")

    def __init__(self, kind: str, site: Optional[OpSite], resource: str,
                 details: Optional[Callable[[], dict]] = None):
        self.kind, self.site, self.resource, self.details = kind, site, resource, details


class _Record:
    __slots__ = ("blocked", "since", "step_id", "thread")

    def __init__(self, blocked: Blocked, step_id: int):
        self.blocked, self.step_id = blocked, step_id
        self.since = time.time()
        self.thread = threading.current_thread().name


class _Step:
    __slots__ = ("step_id", "kind", "task", "plan", "since")

    def __init__(self, step_id: int, kind: str, task: Optional[str], plan):
        self.step_id, self.kind, self.task, self.plan = step_id, kind, task, plan
        self.since = time.time()


_lock = threading.Lock()
_waits: Dict[int, _Record] = {}
_steps: Dict[int, _Step] = {}
_keys = itertools.count()
# A plan's fills, computed at the first poll that sees one of its steps (plans live long).
_fills_of_plan: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def blocking(blocked: Blocked, step_id: int = 0) -> Iterator[None]:
    """Registers, for the duration, that this thread is blocked in ``blocked``."""
    key = next(_keys)
    record = _Record(blocked, step_id)
    with _lock:
        _waits[key] = record
    try:
        yield
    finally:
        with _lock:
            del _waits[key]


@contextlib.contextmanager
def step_running(step_id: int, kind: str, task: Optional[str] = None, plan=None
                 ) -> Iterator[None]:
    """Marks a step in flight in this process: ``kind`` "partition" (run for a master by the
    worker service of ``task``) or "session" (a master's Session.run); ``plan`` has the ops."""
    key = next(_keys)
    step = _Step(step_id, kind, task, plan)
    with _lock:
        _steps[key] = step
    try:
        yield
    finally:
        with _lock:
            del _steps[key]


def waits() -> List[dict]:
    """The threads blocked now, oldest first, each as a JSON-ready dict: kind, op, type,
    device (None outside an op), resource, details (read now), since (time.time()), step_id,
    thread."""
    with _lock:
        records = sorted(_waits.values(), key=lambda r: r.since)
    out = []
    for r in records:
        b = r.blocked
        try:
            details = b.details() if b.details is not None else {}
        except Exception as e:   # a description must never break a poll
            details = {"error": f"{type(e).__name__}: {e}"}
        site = b.site
        out.append({"kind": b.kind, "op": site.op if site else None,
                    "type": site.type if site else None,
                    "device": site.device if site else None, "resource": b.resource,
                    "details": details, "since": r.since, "step_id": r.step_id,
                    "thread": r.thread})
    return out


def steps_in_flight() -> List[dict]:
    """The steps running in this process: step_id, kind, task, since, fills ([{kind, resource,
    op, device}] of its plan's enqueues and gradient applies)."""
    with _lock:
        steps = sorted(_steps.values(), key=lambda s: s.since)
    return [{"step_id": s.step_id, "kind": s.kind, "task": s.task, "since": s.since,
             "fills": _fills(s.plan)} for s in steps]


def _fills(plan) -> List[dict]:
    if plan is None:
        return []
    try:
        return _fills_of_plan[plan]
    except KeyError:
        pass
    except TypeError:   # not weakly referenceable: computed each time
        return _fills_of(plan)
    fills = _fills_of_plan[plan] = _fills_of(plan)
    return fills


def _fills_of(plan) -> List[dict]:
    out = []
    for op in getattr(plan, "ops", ()) or ():
        kind = FILL_TYPES.get(op.type)
        if kind is None or not op.inputs:
            continue
        src = op.inputs[0].op
        out.append({"kind": kind, "resource": resource_label(src), "op": op.name,
                    "device": src.device or op.device})
    return out
