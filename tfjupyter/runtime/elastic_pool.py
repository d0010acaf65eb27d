"""A thread pool that never makes work wait for a free thread.

Steps block: an enqueue on a full queue, a dequeue on an empty one, a _Recv whose _Send has not
run. With a fixed pool, enough blocked steps hold every thread and the step that would release
them is never run — TensorFlow's queue-runner pattern deadlocks. This pool hands each task to an
idle thread or starts a new one, so a blocked step costs a parked thread, never progress. Idle
threads exit after a while, so a burst leaves nothing behind.
"""
from __future__ import annotations

import queue
import threading
from concurrent import futures

__all__ = ["ElasticThreadPool"]


class ElasticThreadPool(futures.Executor):
    """An Executor whose every task starts at once. Bound the work, not the threads: gRPC's
    ``maximum_concurrent_rpcs`` does, for a server."""

    def __init__(self, thread_name_prefix: str = "tfjupyter", idle_timeout_s: float = 30.0):
        self._name = thread_name_prefix
        self._idle_timeout_s = idle_timeout_s
        self._work: "queue.SimpleQueue" = queue.SimpleQueue()
        self._lock = threading.Lock()
        # Invariant: threads waiting for work (or about to) == _unclaimed_idle + queued tasks.
        self._unclaimed_idle = 0
        self._threads = 0
        self._shutdown = False

    @property
    def thread_count(self) -> int:
        return self._threads

    def submit(self, fn, /, *args, **kwargs) -> futures.Future:
        future: futures.Future = futures.Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError(f"{self._name}: cannot submit after shutdown")
            self._work.put((future, fn, args, kwargs))
            if self._unclaimed_idle:
                self._unclaimed_idle -= 1
                return future
            self._threads += 1
        threading.Thread(target=self._serve, name=f"{self._name}-{self._threads}",
                         daemon=True).start()
        return future

    def _serve(self) -> None:
        while True:
            try:
                item = self._work.get(timeout=self._idle_timeout_s)
            except queue.Empty:
                with self._lock:
                    if self._unclaimed_idle:    # nobody queued work for this thread: retire
                        self._unclaimed_idle -= 1
                        self._threads -= 1
                        return
                continue                        # a task was queued for us just now
            if item is None:
                return
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as e:  # noqa: B036 — the future carries it to the caller
                    future.set_exception(e)
                else:
                    future.set_result(result)
                del future, fn, args, kwargs, item
            with self._lock:
                if self._shutdown:
                    self._threads -= 1
                    return
                self._unclaimed_idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        # Threads are daemons: a step blocked forever must not hold up the interpreter's exit,
        # so `wait` only lets the queued work start, it does not join.
        with self._lock:
            self._shutdown = True
            idle, self._unclaimed_idle = self._unclaimed_idle, 0
            self._threads -= idle
        if cancel_futures:
            while True:
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in range(idle):
            self._work.put(None)
