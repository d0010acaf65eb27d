"""Cancelling steps: blocking kernels (queues, accumulators, receives) wait through here.

Whoever runs a step (Session.run, a worker running a graph partition) installs a
CancellationToken for the thread. A kernel that must wait calls ``wait_until`` with its
condition variable: the wait wakes up when the predicate holds, when the token is cancelled
(CancelledError, e.g. the session closed or another partition of the step failed) or when the
step's deadline passes (DeadlineExceededError). No wait is ever unbounded and unstoppable.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Optional

from ..framework import errors
from . import waits

__all__ = ["CancellationToken", "current", "step_scope", "wait_until"]

_POLL_SECONDS = 0.05


class CancellationToken:
    def __init__(self, timeout_s: Optional[float] = None, step_id: int = 0):
        self.step_id = step_id
        self.pushes: list = []   # (destination, future) of the step's outgoing tensors
        # Tensors to send, batched per destination until the step next waits (or ends).
        self.outbox: dict = {}
        self.flush = None
        self.deadline = None if not timeout_s else time.monotonic() + timeout_s
        self.reason: Optional[str] = None
        self.error_class = errors.CancelledError
        self._lock = threading.Lock()
        self._waiting: set = set()
        self._callbacks: list = []

    @property
    def cancelled(self) -> bool:
        return self.reason is not None

    def cancel(self, reason: str = "Step was cancelled", error_class=errors.CancelledError) -> None:
        with self._lock:
            if self.reason is None:
                self.reason, self.error_class = reason, error_class
            waiting = list(self._waiting)
            callbacks = list(self._callbacks)
        for cond in waiting:  # wake the waiters so they see the flag at once
            with cond:
                cond.notify_all()
        for fn in callbacks:
            fn()

    def add_callback(self, fn) -> None:
        """Calls ``fn()`` when the step is cancelled (at once if it already is)."""
        with self._lock:
            if self.reason is None:
                self._callbacks.append(fn)
                return
        fn()

    def remove_callback(self, fn) -> None:
        with self._lock:
            if fn in self._callbacks:
                self._callbacks.remove(fn)

    def check(self, what: str = "") -> None:
        if self.reason is not None:
            raise self.error_class(None, None, f"{self.reason}{': ' + what if what else ''}")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise errors.DeadlineExceededError(
                None, None, f"Timed out{' while ' + what if what else ''}")

    def _register(self, cond) -> None:
        with self._lock:
            self._waiting.add(cond)

    def _unregister(self, cond) -> None:
        with self._lock:
            self._waiting.discard(cond)


_NEVER = CancellationToken()
_local = threading.local()


def current() -> CancellationToken:
    return getattr(_local, "token", _NEVER)


class step_scope:
    """``with step_scope(token):`` makes ``token`` the thread's current one, restoring the
    previous one after. A class rather than a generator-based context manager, which costs
    twice as much: every Session.run enters one, and queue runners run small steps many
    thousand times a second."""

    __slots__ = ("token", "saved")

    def __init__(self, token: CancellationToken):
        self.token = token

    def __enter__(self) -> CancellationToken:
        self.saved = getattr(_local, "token", None)
        _local.token = self.token
        return self.token

    def __exit__(self, *exc_info) -> None:
        _local.token = self.saved


def wait_until(cond: threading.Condition, predicate: Callable[[], bool], what: str,
               blocked: Optional[waits.Blocked] = None) -> None:
    """Waits (holding ``cond``, as Condition.wait does) until ``predicate()`` is true.

    Raises CancelledError or DeadlineExceededError, naming ``what``, if the step ends first.
    ``blocked`` says what the thread waits in (runtime/waits.py): registered only if it does.
    """
    token = current()
    if token.outbox:  # what this step has to send may be what the wait is for
        cond.release()
        try:
            token.flush()
        finally:
            cond.acquire()
    if predicate():
        return
    token._register(cond)
    try:
        with waits.blocking(blocked, token.step_id) if blocked else contextlib.nullcontext():
            while not predicate():
                token.check(what)
                cond.wait(_POLL_SECONDS)
    finally:
        token._unregister(cond)
