"""``tf.train.Coordinator``: stops a set of threads together, and reports their exceptions.

    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    try:
        while not coord.should_stop():
            sess.run(train_op)
    except Exception as e:
        coord.request_stop(e)
    finally:
        coord.request_stop()
        coord.join(threads)       # re-raises the first exception a thread reported
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import Callable, Iterable, Optional, Sequence

from ..framework import errors

__all__ = ["Coordinator", "LooperThread"]

_log = logging.getLogger("tfjupyter")


class Coordinator:
    """Coordinates the termination of threads: any of them (or the main loop) may call
    ``request_stop``; all of them poll ``should_stop``; ``join`` waits for them."""

    def __init__(self, clean_stop_exception_types: Optional[Sequence[type]] = None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads = set()

    def _filter_exception(self, ex):
        """None for exceptions that only mean "done" (OutOfRangeError), else the exc_info."""
        if isinstance(ex, tuple):
            ex2 = ex[1]
        else:
            ex2 = ex
        if isinstance(ex2, self._clean_stop_exception_types):
            ex = None
        return ex

    def request_stop(self, ex=None) -> None:
        """Asks every thread to stop. ``ex`` (an exception or an exc_info tuple) is re-raised
        by ``join``; only the first one reported is kept."""
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                # Reported after join() returned: nobody will re-raise it, so the reporting
                # thread does (as TensorFlow).
                if isinstance(ex, tuple):
                    raise ex[1].with_traceback(ex[2])
                if ex is not None:
                    raise ex
                return
            if not self._stop_event.is_set():
                if ex and self._exc_info_to_raise is None:
                    if isinstance(ex, tuple):
                        _log.info("Error reported to Coordinator: %s", ex[1])
                        self._exc_info_to_raise = ex
                    else:
                        _log.info("Error reported to Coordinator: %s, %s", type(ex), ex)
                        self._exc_info_to_raise = (type(ex), ex, ex.__traceback__)
                    # Fail early if the exception object cannot be raised.
                    if (len(self._exc_info_to_raise) != 3 or not self._exc_info_to_raise[0]
                            or not self._exc_info_to_raise[1]):
                        try:
                            raise ValueError(f"ex must be a tuple or sys.exc_info, got: {ex}")
                        except ValueError:
                            self._exc_info_to_raise = sys.exc_info()
                self._stop_event.set()

    def clear_stop(self) -> None:
        """Makes should_stop() False again and forgets any reported exception."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            if self._stop_event.is_set():
                self._stop_event.clear()

    def should_stop(self) -> bool:
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """``with coord.stop_on_exception():`` reports any exception from the body with
        request_stop (and does not propagate it)."""
        try:
            yield
        except BaseException:  # noqa: B902 - as TensorFlow: the thread's error goes to join()
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: Optional[float] = None) -> bool:
        """Waits until a stop is requested; True if it was, False after ``timeout`` seconds."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        """Adds a thread to those join() waits for."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads: Optional[Iterable[threading.Thread]] = None,
             stop_grace_period_secs: float = 120, ignore_live_threads: bool = False) -> None:
        """Waits for the threads (given and registered) to finish after a stop is requested.

        Re-raises the first exception passed to request_stop. Threads still alive
        ``stop_grace_period_secs`` after the stop request raise RuntimeError naming them
        (only logged with ``ignore_live_threads``).
        """
        threads = set(threads or ())
        with self._lock:
            threads |= self._registered_threads
            self._registered_threads = set()
        threads = list(threads)
        # Wait for every thread to finish or for a stop request.
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(0.05):
            pass
        # After the stop request, give the threads the grace period to finish.
        stop_wait_secs = 0.001
        deadline = time.time() + stop_grace_period_secs
        while any(t.is_alive() for t in threads) and time.time() < deadline:
            time.sleep(stop_wait_secs)
            stop_wait_secs = min(1.0, stop_wait_secs * 2)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                _, ex_instance, tb = self._exc_info_to_raise
                raise ex_instance.with_traceback(tb)
            if stragglers:
                if ignore_live_threads:
                    _log.info("Coordinator stopped with threads still running: %s",
                              " ".join(stragglers))
                else:
                    raise RuntimeError("Coordinator stopped with threads still running: "
                                       + " ".join(stragglers))

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raises the exception reported to request_stop, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                _, ex_instance, tb = self._exc_info_to_raise
                raise ex_instance.with_traceback(tb)


class LooperThread(threading.Thread):
    """A thread that calls ``target(*args, **kwargs)`` every ``timer_interval_secs`` (or in a
    tight loop when it is None) until the coordinator says stop; exceptions go to the
    coordinator."""

    def __init__(self, coord: Coordinator, timer_interval_secs: Optional[float],
                 target: Optional[Callable] = None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        if self._target:
            self._args = args or ()
            self._kwargs = kwargs or {}
        elif args or kwargs:
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._coord.register_thread(self)

    @staticmethod
    def loop(coord: Coordinator, timer_interval_secs: Optional[float], target: Callable,
             args=None, kwargs=None) -> "LooperThread":
        """Starts a LooperThread that calls ``target`` repeatedly; returns it."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_timer_time = time.time()
                while not self._coord.wait_for_stop(next_timer_time - time.time()):
                    next_timer_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once before the loop starts (override)."""

    def stop_loop(self) -> None:
        """Called once after the loop ends (override)."""

    def run_loop(self) -> None:
        """One iteration: calls the target (override, or pass ``target``)."""
        if self._target:
            self._target(*self._args, **self._kwargs)
