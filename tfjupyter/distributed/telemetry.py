"""Per-task telemetry over the cluster's own gRPC plane, and ``watch()`` to follow it.

Task side
---------
Constructing a ``Server`` installs (once per process) a **collector**: it subscribes to the
``runtime.events`` kinds ``step``, ``placement``, ``summary``, ``trace`` and ``sync`` and keeps
the last ``RING_SIZE`` records, numbered by an increasing sequence number. Every Server also
serves the unary RPC ``/tfjupyter.Telemetry/Poll`` (bytes in and out, JSON) on its grpc server,
behind the same token interceptor as the worker service: a call without the cluster token is
refused with UNAUTHENTICATED.

Request: ``{"since": seq, "max": n, "records": true, "incarnation": "...", "trace_every": n}``
(all optional; ``since`` counts from 0 when ``incarnation`` names another process).
``trace_every`` (a positive int) asks the process to trace one Session.run in every n
(``events.request_traces``): the request holds while polls keep asking for it and lapses
``TRACE_REQUEST_TTL`` seconds (10) after the last poll that did, so a dashboard that went away
leaves no tracing on; when pollers ask different n, the smallest wins. Reply (JSON object):

* ``task`` ("/job:worker/replica:0/task:1"), ``address``, ``time`` (the task's clock);
* ``pid``, ``host``, ``incarnation`` (random per process), ``process_tasks`` (the names of the
  running Servers of that process, in the order they were made) and ``process_owner``;
* ``records``: ``[seq, kind, time, data]`` with seq > since, at most ``max`` (default
  ``MAX_RECORDS``); ``more`` is true when more remain; ``first_seq``/``last_seq`` bound the ring
  and ``dropped`` counts records after ``since`` that the ring no longer holds. ``data`` per kind:

  - ``step``: session, step, duration, examples, global_step, ops_run, fetches (``time`` is the
    end of the run; examples/global_step as documented in runtime/events.py);
  - ``placement``: op, type, requested, assigned, reason;
  - ``summary``: tag, value, global_step (the process's latest known global step: the value of
    a ``global_step`` variable held by this process, else the last one a step fetched);
  - ``trace``: session, step, duration, global_step, dev_stats (device -> [{node_name, op,
    all_start_micros, op_end_rel_micros}], as runtime/events.py's TraceRecord; at most
    ``TRACE_ENTRIES`` entries in all, the first ones, with ``truncated: true`` when cut);
  - ``sync``: accumulator, step, applied, dropped (runtime/events.py's SyncRecord);

  Traces are large: a reply stops early (``more`` true) once its traces hold
  ``_REPLY_TRACE_ENTRIES`` entries, so it stays well inside gRPC's message limit.

* ``health``: pid, rss_bytes, cpu_percent (since the previous poll of this process, measured
  over at least 0.2 s), threads, uptime_s;
* ``devices``: [{name, type, description}] of this task;
* ``global_step``: the value of the variable ``global_step`` if one of this task's devices holds
  it (read from the device's ResourceManager, so a ps reports the authoritative step at no RPC
  cost), else null; ``process_global_step``: the last global step a step of this process
  fetched (null if none did).
* ``waits``: what the process's threads are blocked in now (runtime/waits.py), each
  {kind, op, type, device, resource, details, since, step_id, thread, task}: kind ``queue``
  (details: queue_type, size, capacity, closed, blocked_enqueues, blocked_dequeues),
  ``accumulator`` (received, needed, applied_steps, global_step), ``recv`` (key, peer,
  transfer) or ``readiness`` (uninitialized, message, master; op and device null); ``since`` is
  the task's clock; ``task`` is the task whose device the op runs on (the ``process_owner`` for
  a wait outside any op).
* ``steps_in_flight``: the steps running in the process, each {step_id, kind (``partition``: run
  here for a master; ``session``: a Session.run of this process), task, since, fills ([{kind,
  resource, op, device}]: the queues its plan enqueues to, the accumulators it applies
  gradients to)}; ``task`` is the partition's task, or the ``process_owner`` for a session step.
  A partition's origin is the task whose ``session`` step has its step_id.

Records are per **process**, not per task: several Servers of one process (tests, notebooks
that host tasks) return the same records. The reply says so (pid, host, incarnation,
``process_tasks``) and a watcher attributes a process's records to one task only: the
``process_owner`` — the first running Server of the process whose job is not ``ps`` (steps are
run by workers), else the first one — when it watches it, else the task that reported them.

Client side
-----------
``watch(targets)`` polls every task from one background thread (each poll with a ~1 s
deadline, all in flight at once, so a frozen or dead task never delays the others) and turns
replies into ``TelemetryEvent``s (kinds ``step``, ``placement``, ``summary``, ``trace``,
``sync``, ``health``, ``alive``, ``dead``, ``error``) and per-task ``TaskStatus``es.
``watch(..., trace_every=n)`` sends ``trace_every`` with every poll.
``Watcher.flush()`` polls every task at once and waits until each has answered with all its
records (a recorder's last look before it stops listening).
"""
from __future__ import annotations

import collections
import itertools
import json
import logging
import os
import queue
import secrets
import socket
import threading
import time
import weakref
from dataclasses import dataclass, field, replace
from typing import Callable, Deque, Dict, Iterator, List, Optional, Tuple

import grpc

from ..runtime import events, waits

__all__ = ["watch", "Watcher", "TelemetryEvent", "TaskStatus", "collector", "service_handler",
           "POLL_METHOD"]

_log = logging.getLogger("tfjupyter.distributed")

SERVICE = "tfjupyter.Telemetry"
POLL_METHOD = f"/{SERVICE}/Poll"
RING_SIZE = 20000          # records a process keeps
MAX_RECORDS = 2000         # records per reply unless the request asks for fewer (or more)
_MAX_RECORDS_LIMIT = 10000
TRACE_ENTRIES = 5000       # dev_stats entries a trace record keeps
_REPLY_TRACE_ENTRIES = 10000   # trace entries per reply (~1-2 MB of JSON; always >= 1 record)
TRACE_REQUEST_TTL = 10.0   # seconds a poll's trace_every request lasts unless renewed


# =================================================================================================
# Task side: the process's collector and the Poll handler
# =================================================================================================
def _process_start_time() -> float:
    """When this process started (seconds since the epoch), from /proc where there is one."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])   # field 22 (starttime), counted after "pid (comm)"
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        try:
            import resource
            import sys
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # peak, not current
            return peak if sys.platform == "darwin" else peak * 1024
        except (ImportError, OSError):
            return 0


def _thread_count() -> int:
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return threading.active_count()


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


class _Collector:
    """The process's telemetry: a bounded ring of step, placement, summary, trace and sync
    records, and the trace requests of its pollers."""

    def __init__(self):
        self._lock = threading.Lock()
        self._servers: List[weakref.ref] = []
        self._traces: Dict[int, list] = {}   # every -> [release, monotonic expiry]
        self._trace_timer: Optional[threading.Timer] = None
        self._trace_lock = threading.Lock()
        self._reset()
        events.subscribe("step", self._on_step)
        events.subscribe("placement", self._on_placement)
        events.subscribe("summary", self._on_summary)
        events.subscribe("trace", self._on_trace)
        events.subscribe("sync", self._on_sync)

    def _reset(self) -> None:
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.incarnation = secrets.token_hex(8)
        self.started = _process_start_time()
        self.ring: Deque[tuple] = collections.deque(maxlen=RING_SIZE)
        self.seq = 0
        self.global_step: Optional[int] = None   # the last one a step of this process fetched
        self._cpu_sample = (time.monotonic(), _cpu_seconds(), 0.0)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._servers = []
        self._reset()
        # The pollers asked the parent: the child (a new incarnation) traces only if asked.
        self._trace_lock = threading.Lock()
        self._trace_timer = None
        held, self._traces = self._traces, {}
        for release, _ in held.values():
            release()

    # -- listeners (the hot path when someone listens: a lock and an append) ----------------------
    def _on_step(self, record: events.StepRecord) -> None:
        if record.global_step is not None:
            self.global_step = record.global_step
        with self._lock:
            self.seq += 1
            self.ring.append((self.seq, "step", record.wall_time, record))

    def _on_placement(self, records: List[events.PlacementRecord]) -> None:
        now = time.time()
        with self._lock:
            for record in records:
                self.seq += 1
                self.ring.append((self.seq, "placement", now, record))

    def _on_summary(self, record: events.SummaryRecord) -> None:
        step = self._latest_global_step()
        with self._lock:
            self.seq += 1
            self.ring.append((self.seq, "summary", record.wall_time, (record, step)))

    def _on_trace(self, record: events.TraceRecord) -> None:
        # Capped here rather than when encoded, so the ring never holds huge traces.
        stats, entries, truncated = _capped_dev_stats(record.dev_stats, TRACE_ENTRIES)
        with self._lock:
            self.seq += 1
            self.ring.append((self.seq, "trace", record.wall_time,
                              (record, stats, entries, truncated)))

    def _on_sync(self, record: events.SyncRecord) -> None:
        with self._lock:
            self.seq += 1
            self.ring.append((self.seq, "sync", record.wall_time, record))

    # -- trace requests of pollers -----------------------------------------------------------------
    def ask_traces(self, every: int) -> None:
        """Holds ``events.request_traces(every)`` for ``TRACE_REQUEST_TTL`` s from now."""
        with self._trace_lock:
            held = self._traces.get(every)
            if held is None:
                held = self._traces[every] = [events.request_traces(every), 0.0]
            held[1] = time.monotonic() + TRACE_REQUEST_TTL
            self._expire_traces()

    def _expire_traces(self) -> None:
        """Releases the lapsed requests; while some remain, a timer comes back at the first
        expiry (renewals only move expiries later, so one timer at a time suffices)."""
        now = time.monotonic()
        for every, (release, expiry) in list(self._traces.items()):
            if expiry <= now:
                del self._traces[every]
                release()
        if self._traces and self._trace_timer is None:
            first = min(expiry for _, expiry in self._traces.values())
            self._trace_timer = threading.Timer(max(0.0, first - now) + 0.01, self._on_timer)
            self._trace_timer.daemon = True
            self._trace_timer.start()

    def _on_timer(self) -> None:
        with self._trace_lock:
            self._trace_timer = None
            self._expire_traces()

    # -- servers of this process -------------------------------------------------------------------
    def add_server(self, server) -> None:
        with self._lock:
            self._servers = [r for r in self._servers if r() is not None] + [weakref.ref(server)]

    def servers(self) -> list:
        live = [r() for r in self._servers]
        return [s for s in live if s is not None and not getattr(s, "_stopped", False)]

    def _latest_global_step(self) -> Optional[int]:
        for server in self.servers():
            step = _task_global_step(server)
            if step is not None:
                return step
        return self.global_step

    # -- the Poll reply ----------------------------------------------------------------------------
    def health(self) -> dict:
        now, cpu = time.monotonic(), _cpu_seconds()
        with self._lock:
            last_t, last_cpu, percent = self._cpu_sample
            if now - last_t >= 0.2:
                percent = 100.0 * (cpu - last_cpu) / (now - last_t)
                self._cpu_sample = (now, cpu, percent)
        return {"pid": self.pid, "rss_bytes": _rss_bytes(), "cpu_percent": round(percent, 1),
                "threads": _thread_count(), "uptime_s": round(time.time() - self.started, 3)}

    def records_after(self, since: int, limit: int) -> Tuple[list, bool, int, int, int]:
        with self._lock:
            last = self.seq
            first = self.ring[0][0] if self.ring else last + 1
            start = max(0, since + 1 - first)
            chosen = list(itertools.islice(self.ring, start, start + limit))
        budget = _REPLY_TRACE_ENTRIES
        for i, entry in enumerate(chosen):
            if entry[1] == "trace":
                budget -= entry[3][2]
                if budget < 0 and i:
                    del chosen[i:]   # the rest comes with the next poll ("more")
                    break
        dropped = max(0, first - since - 1) if since < last else 0
        more = bool(chosen) and chosen[-1][0] < last
        return [_encode(entry) for entry in chosen], more, first, last, dropped

    def poll(self, server, request: bytes) -> bytes:
        try:
            args = json.loads(request.decode() or "{}") if request else {}
            if not isinstance(args, dict):
                raise ValueError("the request must be a JSON object")
            since = int(args.get("since", 0))
            limit = max(0, min(int(args.get("max", MAX_RECORDS)), _MAX_RECORDS_LIMIT))
            want = bool(args.get("records", True))
            if args.get("incarnation") not in (None, self.incarnation):
                since = 0   # the watcher's cursor is from a process that is gone
            trace_every = args.get("trace_every")
            if trace_every is not None and (type(trace_every) is not int or trace_every <= 0):
                raise ValueError(f"trace_every must be a positive int, got {trace_every!r}")
        except (ValueError, TypeError, UnicodeDecodeError) as e:
            raise _BadRequest(f"Telemetry.Poll: bad request: {e}") from None
        if trace_every is not None:
            self.ask_traces(trace_every)
        if want and limit:
            records, more, first, last, dropped = self.records_after(since, limit)
        else:
            records, more, first, last, dropped = [], False, 0, self.seq, 0
        servers = self.servers()
        names = [_task_name(s) for s in servers]
        owner = next((s for s in servers if s.server_def.job_name != "ps"),
                     servers[0] if servers else server)
        owner_name = _task_name(owner)
        reply = {
            "task": _task_name(server), "address": server._address, "time": time.time(),
            "pid": self.pid, "host": self.host, "incarnation": self.incarnation,
            "process_tasks": names, "process_owner": _task_name(owner),
            "records": records, "more": more, "first_seq": first, "last_seq": last,
            "dropped": dropped, "health": self.health(),
            "devices": [{"name": d.name, "type": d.device_type, "description": d.description}
                        for d in server._devices],
            "global_step": _task_global_step(server),
            "process_global_step": self.global_step,
            "waits": [dict(w, task=_device_task(w["device"]) or owner_name)
                      for w in waits.waits()],
            "steps_in_flight": [dict(s, task=s["task"] or owner_name)
                                for s in waits.steps_in_flight()],
        }
        return json.dumps(reply, separators=(",", ":")).encode()


class _BadRequest(ValueError):
    pass


def _task_name(server) -> str:
    sd = server.server_def
    return f"/job:{sd.job_name}/replica:0/task:{sd.task_index}"


def _device_task(device: Optional[str]) -> Optional[str]:
    """"/job:ps/replica:0/task:0" of a device name (None for None)."""
    return device.partition("/device:")[0] if device else None


def _task_global_step(server) -> Optional[int]:
    """The value of the variable ``global_step`` if one of the server's devices holds it."""
    for device in server._devices:
        value = device.resources.variables.get("global_step")
        if value is None:
            continue
        dtype = getattr(value, "dtype", None)
        if getattr(value, "size", 0) == 1 and getattr(dtype, "kind", "") in "iu" \
                and hasattr(value, "reshape") and type(value).__module__ == "numpy":
            return int(value.reshape(-1)[0])
    return None


def _encode(entry: tuple) -> list:
    seq, kind, t, payload = entry
    if kind == "step":
        r = payload
        data = {"session": r.session_id, "step": r.step, "duration": r.duration,
                "examples": r.examples, "global_step": r.global_step, "ops_run": r.ops_run,
                "fetches": r.fetches}
    elif kind == "placement":
        r = payload
        data = {"op": r.op, "type": r.type, "requested": r.requested, "assigned": r.assigned,
                "reason": r.reason}
    elif kind == "trace":
        r, stats, _, truncated = payload
        data = {"session": r.session_id, "step": r.step, "duration": r.duration,
                "global_step": r.global_step, "dev_stats": stats}
        if truncated:
            data["truncated"] = True
    elif kind == "sync":
        r = payload
        data = {"accumulator": r.accumulator, "step": r.step, "applied": r.applied,
                "dropped": r.dropped}
    else:
        r, step = payload
        data = {"tag": r.tag, "value": r.value, "global_step": step}
    return [seq, kind, t, data]


def _capped_dev_stats(dev_stats: Dict[str, List[dict]], cap: int) -> Tuple[dict, int, bool]:
    """(dev_stats with its first ``cap`` entries in all, entries kept, whether any were cut)."""
    total = sum(len(stats) for stats in dev_stats.values())
    if total <= cap:
        return dev_stats, total, False
    kept, left = {}, cap
    for device, stats in dev_stats.items():
        if left <= 0:
            break
        kept[device] = stats[:left]
        left -= len(kept[device])
    return kept, cap, True


_collector: Optional[_Collector] = None
_collector_lock = threading.Lock()


def collector() -> _Collector:
    """The process's collector, installed on first use (a Server's construction)."""
    global _collector
    if _collector is None:
        with _collector_lock:
            if _collector is None:
                _collector = _Collector()
                if hasattr(os, "register_at_fork"):
                    os.register_at_fork(after_in_child=_collector._after_fork)
    return _collector


def service_handler(server) -> grpc.GenericRpcHandler:
    """The Telemetry service of ``server`` (installs the process's collector)."""
    from ..framework import errors
    from .wire import rpc_method_handler
    c = collector()
    c.add_server(server)
    ref = weakref.ref(server)

    def task() -> str:
        s = ref()   # its server_def is set after this handler is made: read it per call
        return _task_name(s) if s is not None else "a stopped server"

    def poll(request: bytes, context) -> bytes:
        s = ref()
        if s is None:
            raise errors.UnavailableError(None, None, "tfjupyter: the server is gone")
        try:
            return c.poll(s, request)
        except _BadRequest as e:
            # The guard names the method and the task.
            raise errors.InvalidArgumentError(
                None, None, str(e).removeprefix("Telemetry.Poll: ")) from None
        except (OverflowError, RecursionError) as e:
            # From the request too: a JSON number no int can hold ({"since": 1e400}), or
            # arrays nested deeper than the decoder goes.
            raise errors.InvalidArgumentError(None, None, f"bad request: {e}") from None

    # wire.rpc_method_handler: a malformed poll fails with INVALID_ARGUMENT naming this task,
    # anything unexpected with INTERNAL (never grpc's UNKNOWN "Exception calling application").
    return grpc.method_handlers_generic_handler(SERVICE, {
        "Poll": rpc_method_handler("Telemetry.Poll", task, poll)})


# =================================================================================================
# Client side: watch()
# =================================================================================================
@dataclass(frozen=True)
class TelemetryEvent:
    """One thing a watcher saw. ``time`` is the task's clock for records (step, placement,
    summary, health) and this process's clock for alive/dead/error.

    ``data`` by kind:
      step: session, step, duration, examples, global_step, ops_run, fetches, seq
      placement: op, type, requested, assigned, reason, seq
      summary: tag, value, global_step, seq
      trace: session, step, duration, global_step, dev_stats (device -> [{node_name, op,
        all_start_micros, op_end_rel_micros}]), seq, and truncated (true) when the task cut
        dev_stats to its first TRACE_ENTRIES entries
      sync: accumulator, step, applied, dropped, seq
      health: pid, rss_bytes, cpu_percent, threads, uptime_s, global_step (the task's own)
      alive: pid, host, incarnation, address, restarted (a new incarnation after one seen)
      dead: error, address, last_seen (this process's clock), pid
      error: error, address (the task answered but refused us: wrong token, no service)
    """
    task: str
    kind: str
    time: float
    data: dict


@dataclass
class TaskStatus:
    """What a watcher knows of one task (``Watcher.snapshot()``).

    ``steps_per_sec``/``examples_per_sec``: the step records attributed to the task that ended
    in the last ``window`` seconds (of the task's clock, extrapolated from its last reply),
    divided by that window, or by the time since the first of them began when that is
    shorter (a task that just started is not under-counted); 0 for a dead task. A step is one
    Session.run of the task's process that carried a batch (examples > 0), or any run when
    none did; its examples follow the rule in runtime/events.py.
    """
    task: str
    address: str
    state: str = "unknown"          # "alive", "dead" or "unknown"
    pid: Optional[int] = None
    host: Optional[str] = None
    incarnation: Optional[str] = None
    devices: List[dict] = field(default_factory=list)
    global_step: Optional[int] = None   # max of the task-reported and the step-fetched values
    steps_per_sec: float = 0.0
    examples_per_sec: float = 0.0
    last_step_time: Optional[float] = None   # the task's clock, end of its last step
    steps: int = 0                      # step records attributed to this task so far
    health: dict = field(default_factory=dict)
    error: Optional[str] = None
    process_tasks: List[str] = field(default_factory=list)  # tasks sharing its process
    last_seen: Optional[float] = None   # this process's clock, last successful poll
    # As of its last reply: the waits and steps in flight attributed to this task (the Poll
    # reply's ``waits`` and ``steps_in_flight`` whose ``task`` is this one; [] once dead).
    waits: List[dict] = field(default_factory=list)
    steps_in_flight: List[dict] = field(default_factory=list)


class _Watched:
    """A watcher's state for one task."""

    def __init__(self, name: str, address: str, metadata, call):
        self.status = TaskStatus(task=name, address=address)
        self.name = name
        self.named = not name.startswith("grpc://")
        self.metadata = metadata
        self.call = call
        self.future = None
        self.next_due = 0.0
        self.launched = 0.0     # our monotonic clock when the poll in flight was sent
        self.caught_up = 0.0    # the send time of the last poll answered in full (or failed)
        self.failures = 0
        self.first_failure = 0.0
        self.process: Optional[tuple] = None
        self.steps: Deque[tuple] = collections.deque()   # (end time, duration, examples)
        self.clock: Optional[Tuple[float, float]] = None  # (task time, our monotonic time)
        self.reported_step: Optional[int] = None
        self.fetched_step: Optional[int] = None


class Watcher:
    """Follows a cluster's tasks: iterate it for TelemetryEvents, or ask ``snapshot()``.

    Callbacks added with ``add_callback(fn)`` run on the watcher's thread, once per event, in
    order; a GUI must hop to its own thread (e.g. ``ioloop.add_callback``) before touching
    widgets. An exception in a callback is logged and does not stop the watcher.
    Events nobody takes are kept up to ``max_events`` (the oldest go first; ``dropped`` counts
    them).
    """

    def __init__(self, tasks: List[Tuple[str, str]], token: Optional[str] = None,
                 interval: float = 0.5, tls=None, window: float = 5.0,
                 deadline: float = 1.0, max_events: int = 100000, trace_every: int = 0):
        from .auth import TOKEN_METADATA_KEY, TlsConfig, token_for_target
        from .server import local_server_token
        from .worker import make_channel
        if interval <= 0 or window <= 0 or deadline <= 0:
            raise ValueError("watch: interval, window and deadline must be positive")
        if type(trace_every) is not int or trace_every < 0:
            raise ValueError(f"watch: trace_every must be an int >= 0, got {trace_every!r}")
        if type(max_events) is not int or max_events < 1:
            raise ValueError(f"watch: max_events must be an int >= 1, got {max_events!r}")
        self.trace_every = trace_every
        self.interval, self.window, self.deadline = float(interval), float(window), float(deadline)
        tls = tls if tls is not None else TlsConfig()
        credentials = tls.channel_credentials() if tls.enabled else None
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._events: Deque[TelemetryEvent] = collections.deque()
        self._max_events = max_events
        self.dropped = 0
        self._callbacks: List[Callable[[TelemetryEvent], None]] = []
        self._closed = False
        self._flush_asked = 0.0   # our monotonic clock at the last flush(): poll at once
        self._stop = threading.Event()
        self._done: "queue.Queue" = queue.Queue()
        self._cursors: Dict[tuple, int] = {}       # process -> last record seq taken
        self._process_owner: Dict[tuple, str] = {}  # process -> the task its records go to
        self._channels: List[grpc.Channel] = []
        self._tasks: List[_Watched] = []
        pending_errors = []
        for name, address in tasks:
            key = token or local_server_token(address) or token_for_target(address)
            channel = make_channel(address, credentials)
            self._channels.append(channel)
            call = channel.unary_unary(POLL_METHOD)
            watched = _Watched(name, address, ((TOKEN_METADATA_KEY, key),) if key else None, call)
            if key is None:
                watched.status.error = (f"{name} ({address}): no cluster token known: pass "
                                        "token=... or set TFJUPYTER_CLUSTER_TOKEN")
                pending_errors.append(watched)
            self._tasks.append(watched)
        for watched in pending_errors:
            self._emit(TelemetryEvent(watched.name, "error", time.time(), {
                "error": watched.status.error, "address": watched.status.address}))
        self._thread = threading.Thread(target=self._run, name="tfjupyter-watch", daemon=True)
        self._thread.start()

    # -- public API --------------------------------------------------------------------------------
    def add_callback(self, fn: Callable[[TelemetryEvent], None]) -> Callable:
        """Calls ``fn(event)`` on the watcher's thread for every event from now on."""
        with self._lock:
            self._callbacks.append(fn)
        return fn

    def remove_callback(self, fn: Callable) -> None:
        with self._lock:
            if fn in self._callbacks:
                self._callbacks.remove(fn)

    def flush(self, timeout: float = 3.0) -> bool:
        """Polls every task now and waits until each one has answered a poll sent after this
        call with all its records (their events emitted, callbacks run), or failed, or
        ``timeout`` seconds passed; True if all did. A recorder calls it before it stops
        listening, so the last records (up to ``interval`` seconds of them) are not lost."""
        asked = time.monotonic()
        with self._cond:
            if self._closed:
                return False
            self._flush_asked = asked
        self._done.put(None)   # wakes the polling thread
        deadline = asked + timeout
        with self._cond:
            while True:
                pending = [w for w in self._tasks if w.metadata is not None
                           and w.status.state != "dead" and w.caught_up < asked]
                left = deadline - time.monotonic()
                if not pending or self._closed or left <= 0:
                    return not pending
                self._cond.wait(left)

    def events(self, timeout: float = 0.0) -> List[TelemetryEvent]:
        """The events not taken yet (waiting up to ``timeout`` s for the first one)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._events and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            out = list(self._events)
            self._events.clear()
        return out

    def __iter__(self) -> Iterator[TelemetryEvent]:
        """Yields events as they come; ends once the watcher is closed and drained."""
        while True:
            with self._cond:
                while not self._events and not self._closed:
                    self._cond.wait(0.5)
                if not self._events:
                    return
                event = self._events.popleft()
            yield event

    def snapshot(self) -> Dict[str, TaskStatus]:
        """Task name -> TaskStatus (copies), with rates over the last ``window`` seconds."""
        now = time.monotonic()
        out = {}
        with self._lock:
            for w in self._tasks:
                status = replace(w.status, devices=list(w.status.devices),
                                 health=dict(w.status.health),
                                 process_tasks=list(w.status.process_tasks),
                                 waits=list(w.status.waits),
                                 steps_in_flight=list(w.status.steps_in_flight))
                status.steps_per_sec, status.examples_per_sec = self._rates(w, now)
                out[w.name] = status
        return out

    @property
    def global_step(self) -> Optional[int]:
        """The largest global step any task reported or any step fetched."""
        with self._lock:
            steps = [w.status.global_step for w in self._tasks if w.status.global_step is not None]
        return max(steps) if steps else None

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, timeout: float = 5.0) -> None:
        """Stops polling (bounded by ``timeout``) and ends iteration."""
        if self._closed:
            return
        self._stop.set()
        self._done.put(None)
        self._thread.join(timeout)
        for w in self._tasks:
            if w.future is not None:
                w.future.cancel()
        for channel in self._channels:
            channel.close()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __enter__(self) -> "Watcher":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def __repr__(self) -> str:
        states = ", ".join(f"{w.name}: {w.status.state}" for w in self._tasks)
        return f"<Watcher {states}{' (closed)' if self._closed else ''}>"

    # -- rates -------------------------------------------------------------------------------------
    def _rates(self, w: _Watched, now: float) -> Tuple[float, float]:
        if w.status.state == "dead" or not w.steps or w.clock is None:
            return 0.0, 0.0
        task_now = w.clock[0] + (now - w.clock[1])   # the task's clock, extrapolated
        start = task_now - self.window
        recent = [s for s in w.steps if s[0] > start]
        if not recent:
            return 0.0, 0.0
        first_start = recent[0][0] - recent[0][1]
        span = max(1e-6, min(self.window, task_now - first_start))
        # Training steps are the runs that carry a batch; hooks' and queue runners' bookkeeping
        # runs (a sync chief makes one per step) would double the rate.
        batches = sum(1 for s in recent if s[2])
        return (batches or len(recent)) / span, sum(s[2] for s in recent) / span

    # -- the polling thread ------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                wait = self.interval
                for w in self._tasks:
                    if w.future is None and w.metadata is not None:
                        if now >= w.next_due or w.launched < self._flush_asked:
                            self._launch(w)
                        else:
                            wait = min(wait, w.next_due - now)
                try:
                    item = self._done.get(timeout=max(0.01, wait))
                except queue.Empty:
                    continue
                while item is not None:
                    self._finish(*item)
                    try:
                        item = self._done.get_nowait()
                    except queue.Empty:
                        item = None
        except Exception:  # never die silently: say why the watcher stopped
            _log.exception("tfjupyter watch(): the watcher thread failed")

    def _launch(self, w: _Watched) -> None:
        want = w.process is None or self._owner(w.process, w) is w
        since = self._cursors.get(w.process, 0) if w.process is not None else 0
        args = {"since": since, "records": want,
                "incarnation": w.process[2] if w.process else None}
        if self.trace_every:
            args["trace_every"] = self.trace_every   # renewed by every poll, lapses without
        request = json.dumps(args).encode()
        w.launched = sent = time.monotonic()
        try:
            future = w.call.future(request, timeout=self.deadline, metadata=w.metadata)
        except Exception:   # the channel was closed under us (close())
            w.next_due = time.monotonic() + self.interval
            return
        w.future = future
        future.add_done_callback(lambda f, w=w, sent=sent: self._done.put((w, f, sent)))

    def _finish(self, w: _Watched, future, sent: float) -> None:
        if w.future is future:
            w.future = None
        if self._stop.is_set():
            return
        now = time.monotonic()
        caught_up = True   # all records taken, or nothing more to get from this task now
        try:
            reply = json.loads(future.result())
        except grpc.FutureCancelledError:
            return
        except grpc.RpcError as e:
            self._failed(w, e, now)
        except ValueError as e:   # not JSON: not a tfjupyter task
            self._refused(w, f"{w.name} ({w.status.address}): malformed Telemetry reply: {e}",
                          now)
        else:
            try:
                self._replied(w, reply, now)
                caught_up = not reply.get("more")
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                self._refused(w, f"{w.name} ({w.status.address}): malformed Telemetry reply: "
                              f"{type(e).__name__}: {e}", now)
        if caught_up:
            with self._cond:
                w.caught_up = max(w.caught_up, sent)
                self._cond.notify_all()

    def _failed(self, w: _Watched, e: grpc.RpcError, now: float) -> None:
        code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
        details = e.details() if hasattr(e, "details") else str(e)
        where = f"{w.name} ({w.status.address})"
        if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            self._refused(w, f"{where} refused the cluster token ({code.name}): {details}", now)
            return
        if code == grpc.StatusCode.UNIMPLEMENTED:
            self._refused(w, f"{where} serves no {SERVICE} (a tfjupyter older than this "
                          f"client?): {details}", now)
            return
        if w.failures == 0:
            w.first_failure = now
        w.failures += 1
        w.next_due = now + min(self.interval, 0.5)
        # Dead after two failed polls at least a second apart: a killed task in ~1 s, a frozen
        # one (each poll waits out its deadline) in ~2 s, and one lost packet is not a death.
        if w.failures >= 2 and now - w.first_failure >= 1.0 and w.status.state != "dead":
            error = f"{where}: {code.name}: {details}"
            with self._lock:
                w.status.state = "dead"
                w.status.error = error
                w.status.waits, w.status.steps_in_flight = [], []
            self._emit(TelemetryEvent(w.name, "dead", time.time(),
                                      {"error": error, "address": w.status.address,
                                       "last_seen": w.status.last_seen, "pid": w.status.pid}))

    def _refused(self, w: _Watched, error: str, now: float) -> None:
        w.next_due = now + max(self.interval, 2.0)
        w.failures = 0
        if w.status.error == error and w.status.state == "unknown":
            return
        with self._lock:
            w.status.state = "unknown"
            w.status.error = error
        self._emit(TelemetryEvent(w.name, "error", time.time(),
                                  {"error": error, "address": w.status.address}))

    def _owner(self, process: tuple, reporter: _Watched) -> _Watched:
        """The task a process's records are attributed to (see the module docstring)."""
        owner = self._process_owner.get(process)
        if owner is not None:
            for w in self._tasks:
                if w.name == owner:
                    return w
        return reporter

    def _replied(self, w: _Watched, reply: dict, now: float) -> None:
        name = reply.get("task", w.name)
        process = (reply.get("host"), reply.get("pid"), reply.get("incarnation"))
        self._process_owner[process] = reply.get("process_owner", name)
        new_events: List[TelemetryEvent] = []
        with self._lock:
            status = w.status
            if not w.named and name:   # targets given as addresses: learn the task's name
                w.name = status.task = name
                w.named = True
            restarted = status.incarnation is not None and status.incarnation != process[2]
            if restarted:
                w.steps.clear()
                w.reported_step = w.fetched_step = None
                status.global_step = None
            was = status.state
            w.process = process
            w.failures = 0
            w.clock = (float(reply.get("time", time.time())), now)
            status.state, status.error = "alive", None
            status.pid, status.host, status.incarnation = process[1], process[0], process[2]
            status.devices = list(reply.get("devices", []))
            status.health = dict(reply.get("health", {}))
            status.process_tasks = list(reply.get("process_tasks", []))
            status.waits = [x for x in reply.get("waits", ()) if x.get("task") == status.task]
            status.steps_in_flight = [x for x in reply.get("steps_in_flight", ())
                                      if x.get("task") == status.task]
            status.last_seen = time.time()
            if reply.get("global_step") is not None:
                w.reported_step = int(reply["global_step"])
            if was != "alive":
                new_events.append(TelemetryEvent(name, "alive", time.time(), {
                    "pid": status.pid, "host": status.host, "incarnation": status.incarnation,
                    "address": status.address, "restarted": restarted}))
            owner = self._owner(process, w)
            cursor = self._cursors.get(process, 0)
            for seq, kind, t, data in reply.get("records", ()):
                if seq <= cursor:
                    continue
                cursor = seq
                data = dict(data, seq=seq)
                if kind == "step":
                    owner.steps.append((t, data.get("duration", 0.0), data.get("examples", 0)))
                    owner.status.steps += 1
                    owner.status.last_step_time = t
                    if data.get("global_step") is not None:
                        owner.fetched_step = int(data["global_step"])
                new_events.append(TelemetryEvent(owner.name, kind, t, data))
            self._cursors[process] = max(cursor, self._cursors.get(process, 0))
            if owner is not w:
                owner.clock = w.clock
            oldest = w.clock[0] - self.window   # steps before it count no more
            while owner.steps and owner.steps[0][0] < oldest:
                owner.steps.popleft()
            for t in {w, owner}:
                values = [v for v in (t.reported_step, t.fetched_step) if v is not None]
                t.status.global_step = max(values) if values else t.status.global_step
            health = dict(status.health, global_step=w.reported_step)
            new_events.append(TelemetryEvent(name, "health", w.clock[0], health))
        w.next_due = now if reply.get("more") else now + self.interval
        for event in new_events:
            self._emit(event)

    def _emit(self, event: TelemetryEvent) -> None:
        with self._cond:
            if len(self._events) >= self._max_events:
                self._events.popleft()
                self.dropped += 1
            self._events.append(event)
            self._cond.notify_all()
            callbacks = list(self._callbacks)
        for fn in callbacks:
            try:
                fn(event)
            except Exception:
                _log.exception("tfjupyter watch(): callback %r failed on %s", fn, event.kind)


def _task_list(targets) -> List[Tuple[str, str]]:
    """(name, address) for every task of ``targets``: a ClusterSpec, a dict job -> addresses,
    or a list of "host:port" (whose names are learned from the first reply)."""
    from .cluster import ClusterSpec
    if isinstance(targets, str):
        targets = [targets]
    if isinstance(targets, (ClusterSpec, dict)):
        spec = ClusterSpec(targets)
        return [(f"/job:{job}/replica:0/task:{index}", address)
                for job, index, address in spec.tasks()]
    out = []
    for target in targets:
        if not isinstance(target, str):
            raise TypeError(f"watch: targets must be a ClusterSpec, a dict of job -> addresses or "
                            f"a list of 'host:port', got an item {target!r}")
        address = target[len("grpc://"):] if target.startswith("grpc://") else target
        out.append((f"grpc://{address}", address))
    if not out:
        raise ValueError("watch: no tasks to watch")
    return out


def watch(targets, token: Optional[str] = None, interval: float = 0.5, tls=None,
          window: float = 5.0, trace_every: int = 0, max_events: int = 100000) -> Watcher:
    """Follows the telemetry of every task of ``targets`` over the cluster's gRPC plane.

    ``targets``: a ClusterSpec, a dict job -> addresses, or a list of "host:port" (tasks named
    by address until their first reply). ``token``: the cluster token (default: a Server of
    this process at that address, TFJUPYTER_CLUSTER_TOKEN, or the token file of the address).
    ``tls``: a TlsConfig (default: the TFJUPYTER_TLS_* variables). ``interval``: seconds
    between polls of a task; ``window``: seconds that steps_per_sec/examples_per_sec average.
    ``trace_every``: when > 0, every task's process traces one Session.run in every
    ``trace_every`` while the watcher polls it (``trace`` events; the request lapses ~10 s
    after the watcher stops). ``max_events``: events kept until taken (iteration, ``events()``);
    beyond that the oldest go (``dropped`` counts them). A watcher only asked for ``snapshot()``
    needs no more than 1 (the default's 100,000 events of a busy cluster are tens of MB).

        with tf.distributed.watch(cluster) as w:
            for event in w:
                if event.kind == "step": ...
    """
    return Watcher(_task_list(targets), token=token, interval=interval, tls=tls, window=window,
                   trace_every=trace_every, max_events=max_events)
