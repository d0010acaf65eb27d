"""A cell or function running on some tasks: its output, labelled by task, and its errors.

ipyparallel's client thread fills each engine's output into the run's metadata as it arrives;
``Run.stream`` copies the new part to the notebook from the caller's own thread (a kernel routes
output sent from other threads unreliably), a whole line at a time, prefixed with the task.
"""
from __future__ import annotations

import sys
import time
from typing import Dict, List, Optional, Sequence

__all__ = ["Run", "TaskError"]

_POLL_S = 0.1
_OUTPUT_GRACE_S = 5.0  # how long the output may trail the reply, at most


class TaskError(RuntimeError):
    """Code run on the cluster failed on one or more tasks.

    ``failures`` maps each failing task ("worker:1") to ``(exception name, message, traceback)``.
    """

    def __init__(self, what: str, failures: Dict[str, tuple]):
        self.failures = failures
        lines = [f"{what} failed on {len(failures)} task{'s' if len(failures) > 1 else ''}:"]
        lines += [f"  [{task}] {name}: {value}" for task, (name, value, _) in failures.items()]
        super().__init__("\n".join(lines))

    def _render_traceback_(self) -> List[str]:
        # IPython shows this instead of a local traceback, which would only show the driver.
        out = []
        for task, (name, value, tb) in self.failures.items():
            out.append(f"---- [{task}] remote traceback ----")
            out.extend(tb or [f"{name}: {value}"])
        out.append(str(self))
        return out


class Run:
    """One submission to a set of tasks (``Cluster.run`` returns it when ``block=False``)."""

    def __init__(self, what: str, async_result, task_names: Sequence[str]):
        self.what = what
        self.async_result = async_result
        self.task_names = list(task_names)
        self._printed: Dict[tuple, int] = {}
        self._partial: Dict[tuple, str] = {}
        self.started = time.time()
        self.reported = False   # result() has returned its values or raised its errors

    # -- state -----------------------------------------------------------------------------------
    def done(self) -> bool:
        return self.async_result.ready()

    def pending_tasks(self) -> List[str]:
        children = getattr(self.async_result, "_children", None) or []
        if len(children) != len(self.task_names):
            return [] if self.done() else list(self.task_names)
        return [t for t, child in zip(self.task_names, children) if not child.done()]

    # -- output ----------------------------------------------------------------------------------
    def _metadata(self) -> List[dict]:
        md = self.async_result.metadata
        return [md] if isinstance(md, dict) else list(md)

    def flush_output(self, out=None, final: bool = False) -> None:
        """Prints the output the tasks produced since the last call, whole lines, labelled."""
        for task, md in zip(self.task_names, self._metadata()):
            for stream in ("stdout", "stderr"):
                text = md.get(stream) or ""
                key = (task, stream)
                seen = self._printed.get(key, 0)
                if len(text) <= seen and not (final and self._partial.get(key)):
                    continue
                self._printed[key] = len(text)
                lines = (self._partial.get(key, "") + text[seen:]).split("\n")
                rest = lines.pop()  # what follows the last newline: a line still being printed
                self._partial[key] = "" if final else rest
                if final and rest:
                    lines.append(rest)
                target = out or (sys.stdout if stream == "stdout" else sys.stderr)
                for line in lines:
                    target.write(f"[{task}] {line}\n")
                target.flush()

    def stream(self, timeout: Optional[float] = None, out=None) -> bool:
        """Prints output as it comes until the run ends (True) or ``timeout`` passes (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.async_result.ready():
            self.flush_output(out)
            wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if wait <= 0:
                return False
            self.async_result.wait(wait)
        # The reply (shell channel) can overtake the last output (IOPub): wait for each engine's
        # idle status, which follows all of its output, before the final flush.
        grace = time.monotonic() + _OUTPUT_GRACE_S
        while not self.async_result.wait_for_output(_POLL_S) and time.monotonic() < grace:
            self.flush_output(out)
        self.flush_output(out, final=True)
        return True

    # -- results ---------------------------------------------------------------------------------
    def result(self, timeout: Optional[float] = None, out=None) -> Dict[str, object]:
        """Streams output, then returns {task: value}; raises TaskError naming each failed task."""
        if not self.stream(timeout, out):
            raise TimeoutError(f"{self.what} still running after {timeout} s on "
                               f"{', '.join(self.pending_tasks())}")
        from ipyparallel.error import RemoteError
        values = self.async_result.get(return_exceptions=True)
        if not isinstance(values, list):
            values = [values]
        failures, results = {}, {}
        for task, value in zip(self.task_names, values):
            if isinstance(value, RemoteError):
                failures[task] = (value.ename, value.evalue, _traceback_lines(value))
            elif isinstance(value, BaseException):
                failures[task] = (type(value).__name__, str(value), None)
            else:
                results[task] = value
        self.reported = True
        if failures:
            raise TaskError(self.what, failures)
        return results


def _traceback_lines(error) -> Optional[List[str]]:
    tb = getattr(error, "traceback", None)
    if not tb:
        return None
    return tb.splitlines() if isinstance(tb, str) else list(tb)
