"""A cell or function running on some tasks: its output, labelled by task, and its errors.

ipyparallel's client thread fills each engine's output into the run's metadata as it arrives;
``Run.stream`` copies the new part to the notebook from the caller's own thread (a kernel routes
output sent from other threads unreliably), a whole line at a time, prefixed with the task.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

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


class _Attempt:
    """One engine's go at a task's share of a run: ``result`` is ipyparallel's AsyncResult, of
    several engines (``index`` picks this one's) or of this engine alone (``index`` None)."""

    def __init__(self, result, index: Optional[int] = None, note: str = ""):
        self.result, self.index, self.note = result, index, note

    def metadata(self) -> dict:
        md = self.result.metadata
        return md if isinstance(md, dict) else md[self.index or 0]

    def done(self) -> bool:
        if self.index is None:
            return self.result.ready()
        children = getattr(self.result, "_children", None) or []
        return children[self.index].done() if len(children) > self.index else self.result.ready()

    def value(self):
        """This engine's outcome (once done): its value, or the RemoteError it raised."""
        children = getattr(self.result, "_children", None) or []
        if self.index is not None and len(children) > self.index and not self.result.ready():
            return children[self.index].result()   # the others still run
        values = self.result.get(return_exceptions=True)
        return values[self.index] if self.index is not None and isinstance(values, list) \
            else values

    def engine_died(self) -> bool:
        """Whether it ended because its engine died (ipyparallel's EngineError), not by
        finishing the code."""
        return self.done() and getattr(self.value(), "ename", None) == "EngineError"


class Run:
    """One submission to a set of tasks (``Cluster.run`` returns it when ``block=False``).

    A task's share may be run again on a new engine (``rerun``: its engine died and the cluster
    restarted it) or handed to a task added later (a scale-up); the task's outcome is then the
    last attempt's. While the cluster is restarting a task (``expect_rerun``) the run is not
    done, so ``wait()`` waits for the rerun instead of reporting the dead engine's error.
    """

    def __init__(self, what: str, async_result, task_names: Sequence[str], code: str = "",
                 job: Optional[str] = None):
        self.what = what
        self.async_result = async_result
        self.code = code      # the cell's source ("" for a function): what a rerun runs
        self.job = job
        self.task_names = list(task_names)
        self._attempts: Dict[str, List[_Attempt]] = {
            t: [_Attempt(async_result, i)] for i, t in enumerate(self.task_names)}
        self._awaiting: Dict[str, str] = {}      # task -> why a rerun is coming
        self._final: Dict[str, tuple] = {}       # task -> failure that replaces its outcome
        self._removed: set = set()               # tasks taken out by a scale-down
        self._notices: List[tuple] = []          # (task, line) to print at the next flush
        self._printed: Dict[tuple, int] = {}
        self._partial: Dict[tuple, str] = {}
        self.started = time.time()
        self.reported = False   # result() has returned its values or raised its errors
        self.settle: Optional[Callable[[], None]] = None  # called before the run counts as done

    # -- what the cluster changes ----------------------------------------------------------------
    def expect_rerun(self, task: str, why: str) -> None:
        self._awaiting[task] = why

    def rerun(self, task: str, async_result, note: str) -> None:
        """``task``'s share runs again (or, for a new task, for the first time) on an engine
        of its own: ``async_result``; ``note`` is printed before its output."""
        if task not in self._attempts:
            self.task_names.append(task)
            self._attempts[task] = []
        self._attempts[task].append(_Attempt(async_result, None, note))
        self._awaiting.pop(task, None)
        self._final.pop(task, None)

    def give_up(self, task: str, name: str, message: str) -> None:
        """No rerun is coming: ``task`` fails with ``name: message`` (the dead engine's own
        error follows in its traceback)."""
        self._awaiting.pop(task, None)
        last = self._attempts[task][-1]
        previous = last.value() if last.done() else None
        tb = [f"{getattr(previous, 'ename', type(previous).__name__)}: "
              f"{getattr(previous, 'evalue', previous)}"] if previous is not None else None
        self._final[task] = (name, message, tb)
        self._notices.append((task, message))

    def remove(self, task: str, note: str) -> None:
        """A scale-down took ``task`` out: its outcome (an interrupted cell) is no failure."""
        self._awaiting.pop(task, None)
        self._removed.add(task)
        self._notices.append((task, note))

    def runs_on(self, task: str) -> bool:
        """Whether ``task``'s share had not finished: it runs, is awaited again, or its engine
        died under it (and no outcome was reported or decided yet)."""
        if task in self._awaiting:
            return True
        if task not in self._attempts or task in self._removed or task in self._final \
                or self.reported:
            return False
        last = self._attempts[task][-1]
        return not last.done() or last.engine_died()

    # -- state -----------------------------------------------------------------------------------
    def done(self) -> bool:
        return not self.pending_tasks()

    def pending_tasks(self) -> List[str]:
        return [t for t in self.task_names if t in self._awaiting
                or (t not in self._removed and not self._attempts[t][-1].done())]

    # -- output ----------------------------------------------------------------------------------
    def flush_output(self, out=None, final: bool = False) -> None:
        """Prints the output the tasks produced since the last call, whole lines, labelled."""
        for task in list(self.task_names):
            attempts = self._attempts[task]
            for k, attempt in enumerate(attempts):
                if attempt.note and (task, k) not in self._printed:
                    self._printed[(task, k)] = 0
                    self._write(out or sys.stdout, task, [attempt.note])
                # An earlier engine's output is all there is: flush it whole.
                self._flush_attempt(task, k, attempt.metadata(), out,
                                    final or k < len(attempts) - 1)
        notices, self._notices = self._notices, []
        for task, line in notices:
            self._write(out or sys.stdout, task, [line])

    def _flush_attempt(self, task: str, k: int, md: dict, out, final: bool) -> None:
        for stream in ("stdout", "stderr"):
            text = md.get(stream) or ""
            key = (task, k, stream)
            seen = self._printed.get(key, 0)
            if len(text) <= seen and not (final and self._partial.get(key)):
                continue
            self._printed[key] = len(text)
            lines = (self._partial.get(key, "") + text[seen:]).split("\n")
            rest = lines.pop()  # what follows the last newline: a line still being printed
            self._partial[key] = "" if final else rest
            if final and rest:
                lines.append(rest)
            self._write(out or (sys.stdout if stream == "stdout" else sys.stderr), task, lines)

    @staticmethod
    def _write(target, task: str, lines: List[str]) -> None:
        for line in lines:
            target.write(f"[{task}] {line}\n")
        target.flush()

    def stream(self, timeout: Optional[float] = None, out=None) -> bool:
        """Prints output as it comes until the run ends (True) or ``timeout`` passes (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            while not self.done():
                self.flush_output(out)
                wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
                if wait <= 0:
                    return False
                pending = [self._attempts[t][-1] for t in self.pending_tasks()
                           if t not in self._awaiting]
                if pending:
                    pending[0].result.wait(wait)
                else:
                    time.sleep(wait)
            if self.settle is not None:
                self.settle()   # a task whose engine just died is restarted, not reported
            if self.done():
                break
        # The reply (shell channel) can overtake the last output (IOPub): wait for each engine's
        # idle status, which follows all of its output, before the final flush.
        grace = time.monotonic() + _OUTPUT_GRACE_S
        results = {id(a.result): a.result for attempts in self._attempts.values()
                   for a in attempts[-1:]}
        while time.monotonic() < grace and not all(
                r.wait_for_output(_POLL_S / len(results)) for r in results.values()):
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
        failures, results = {}, {}
        for task in self.task_names:
            if task in self._removed:
                continue
            if task in self._final:
                failures[task] = self._final[task]
                continue
            value = self._attempts[task][-1].value()
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
