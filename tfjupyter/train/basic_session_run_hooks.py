"""Session-run hooks (TensorFlow 1.x's ``session_run_hook`` and ``basic_session_run_hooks``).

A hook sees every step of a MonitoredSession::

    begin()                                   once, before the session exists (may add ops)
    after_create_session(session, coord)      after each (re)creation of the session
    before_run(run_context) -> SessionRunArgs what to add to the step: fetches, feeds, options
    after_run(run_context, run_values)        the step's results for what the hook asked
    end(session)                              once, when the MonitoredSession closes cleanly

The stock hooks: StopAtStepHook, CheckpointSaverHook (+ CheckpointSaverListener),
LoggingTensorHook, StepCounterHook, NanTensorHook, SummarySaverHook, GlobalStepWaiterHook,
FinalOpsHook and FeedFnHook. Every hook that needs the global step reads it through one
shared ``global_step/add`` tensor (``global_step + 0``), created in ``begin``.
"""
from __future__ import annotations

import collections
import logging
import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from ..framework import errors
from ..framework.ops import Graph, GraphKeys, Operation, Tensor, get_default_graph
from ..summary import SessionLog, Summary
from ..summary.writer import FileWriterCache
from . import training_util

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues",
           "SecondOrStepTimer", "LoggingTensorHook", "StopAtStepHook", "CheckpointSaverListener",
           "CheckpointSaverHook", "StepCounterHook", "NanLossDuringTrainingError",
           "NanTensorHook", "SummarySaverHook", "GlobalStepWaiterHook", "FinalOpsHook",
           "FeedFnHook"]

_log = logging.getLogger("tfjupyter")

SummaryWriterCache = FileWriterCache   # TensorFlow's name inside the hooks
_GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


# -- the hook protocol -----------------------------------------------------------------------------
class SessionRunHook:
    """Base class of hooks: every method is optional and does nothing by default."""

    def begin(self) -> None:
        """Called once before the session is created; the graph may still be changed here."""

    def after_create_session(self, session, coord) -> None:
        """Called when a new session was created (and initialized or restored); ``coord`` is
        the Coordinator of its threads. The graph is finalized by now."""

    def before_run(self, run_context: "SessionRunContext") -> Optional["SessionRunArgs"]:
        """Called before each ``run``; return SessionRunArgs to add fetches, feeds or options."""
        return None

    def after_run(self, run_context: "SessionRunContext",
                  run_values: "SessionRunValues") -> None:
        """Called after each ``run`` with the results of what before_run asked for."""

    def end(self, session) -> None:
        """Called when the MonitoredSession closes without an error."""


class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """What a hook adds to a step: ``fetches`` (any fetch structure), ``feed_dict`` and
    ``options`` (RunOptions, merged with the caller's)."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """The step as hooks see it: the caller's ``original_args``, the raw ``session`` (for
    extra runs, which do not call hooks) and ``request_stop()``."""

    def __init__(self, original_args: SessionRunArgs, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Asks the MonitoredSession to stop (``should_stop()`` becomes True after this step)."""
        self._stop_requested = True


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """What a hook gets back: ``results`` of its fetches (None if it asked for none), and the
    step's RunOptions and RunMetadata."""


# -- timers ----------------------------------------------------------------------------------------
class SecondOrStepTimer:
    """Triggers every ``every_secs`` seconds or every ``every_steps`` steps (exactly one)."""

    def __init__(self, every_secs: Optional[float] = None, every_steps: Optional[int] = None):
        self.reset()
        self._every_secs = every_secs
        self._every_steps = every_steps
        if self._every_secs is None and self._every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if self._every_secs is not None and self._every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")

    def reset(self) -> None:
        self._last_triggered_step: Optional[int] = None
        self._last_triggered_time: Optional[float] = None

    def should_trigger_for_step(self, step: int) -> bool:
        """True the first time, then once the interval (seconds or steps) has passed."""
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and \
                time.time() >= self._last_triggered_time + self._every_secs:
            return True
        if self._every_steps is not None and step >= self._last_triggered_step + self._every_steps:
            return True
        return False

    def update_last_triggered_step(self, step: int):
        """Records a trigger at ``step``; returns (elapsed secs, elapsed steps) since the last
        one, (None, None) the first time."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed_secs = elapsed_steps = None
        else:
            elapsed_secs = now - self._last_triggered_time
            elapsed_steps = step - self._last_triggered_step
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed_secs, elapsed_steps

    def last_triggered_step(self) -> Optional[int]:
        return self._last_triggered_step


class _NeverTriggerTimer:
    """The timer of a hook that acts only at the end."""

    def reset(self) -> None:
        pass

    def should_trigger_for_step(self, step: int) -> bool:
        return False

    def update_last_triggered_step(self, step: int):
        return None, None

    def last_triggered_step(self) -> Optional[int]:
        return None


# -- helpers ---------------------------------------------------------------------------------------
def _get_or_create_global_step_read(graph: Optional[Graph] = None) -> Optional[Tensor]:
    """One tensor reading the global step (``global_step/add`` = global_step + 0), shared by
    all hooks; None if the graph has no global step."""
    graph = graph or get_default_graph()
    cached = graph.get_collection(_GLOBAL_STEP_READ_KEY)
    if cached:
        return cached[0]
    step = training_util.get_global_step(graph)
    if step is None:
        return None
    with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None), \
            graph.name_scope(step.op.name + "/"):
        read = step + 0
    graph.add_to_collection(_GLOBAL_STEP_READ_KEY, read)
    return read


def _global_step_read(hook_name: str) -> Tensor:
    read = _get_or_create_global_step_read()
    if read is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}.")
    return read


def _as_graph_element(obj) -> Union[Tensor, Operation]:
    """A Tensor or Operation of the default graph from an element or a name ('loss' means
    'loss:0', and must not be ambiguous)."""
    graph = get_default_graph()
    if not isinstance(obj, str):
        if not hasattr(obj, "graph") or obj.graph is not graph:
            raise ValueError(f"Passed {obj} should have graph attribute that is equal to current "
                             f"graph {graph}.")
        return obj
    if ":" in obj:
        return graph.as_graph_element(obj)
    element = graph.as_graph_element(obj + ":0")
    try:
        graph.as_graph_element(obj + ":1")
    except (KeyError, ValueError):
        return element
    raise ValueError(f"Name {obj} is ambiguous, as this `Operation` has multiple outputs "
                     "(at least 2).")


def write_graph_pbtxt(graph: Graph, logdir: str, name: str = "graph.pbtxt") -> str:
    """Writes ``graph``'s GraphDef in text format to ``logdir/name`` (atomically); returns
    the path. (What ``tf.train.write_graph(graph.as_graph_def(), logdir, name)`` writes.)"""
    from google.protobuf import text_format
    from ..summary.graph_def import graph_to_graph_def
    from .tensor_bundle import as_os_error, atomic_write
    path = os.path.join(logdir, name)
    try:
        os.makedirs(logdir, exist_ok=True)
        text = text_format.MessageToString(graph_to_graph_def(graph, add_shapes=True))
        atomic_write(path, text.encode())
    except OSError as e:
        raise as_os_error(e, f"Failed to write graph {path}") from None
    return path


# -- stopping --------------------------------------------------------------------------------------
class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches ``last_step`` (or ``num_steps`` more steps
    than it was when the session was created)."""

    def __init__(self, num_steps: Optional[int] = None, last_step: Optional[int] = None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        if num_steps is not None and num_steps < 0:
            raise ValueError(f"num_steps must be non-negative, got {num_steps}.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step_tensor = _global_step_read("StopAtStepHook")

    def after_create_session(self, session, coord) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values) -> None:
        # The value read in the step may be from before or after the step's increment; only
        # when it could have reached last_step is the current value read to make sure.
        if run_values.results + 1 >= self._last_step:
            step = run_context.session.run(self._global_step_tensor)
            if step >= self._last_step:
                run_context.request_stop()


# -- checkpoints -----------------------------------------------------------------------------------
class CheckpointSaverListener:
    """Called by CheckpointSaverHook around each save; ``after_save`` returning True asks
    training to stop."""

    def begin(self) -> None:
        pass

    def before_save(self, session, global_step_value: int) -> None:
        pass

    def after_save(self, session, global_step_value: int) -> Optional[bool]:
        pass

    def end(self, session, global_step_value: int) -> None:
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint (``checkpoint_dir/model.ckpt-<global step>``) when the session is
    created, every ``save_secs`` seconds or ``save_steps`` steps, and at the end."""

    def __init__(self, checkpoint_dir: str, save_secs: Optional[float] = None,
                 save_steps: Optional[int] = None, saver=None,
                 checkpoint_basename: str = "model.ckpt", scaffold=None,
                 listeners: Optional[Sequence[CheckpointSaverListener]] = None):
        _log.info("Create CheckpointSaverHook.")
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._steps_per_run = 1

    def begin(self) -> None:
        self._summary_writer = SummaryWriterCache.get(self._checkpoint_dir)
        self._global_step_tensor = _global_step_read("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord) -> None:
        global_step = int(session.run(self._global_step_tensor))
        # Written here, not in begin: other hooks may still add ops in their begin().
        graph = get_default_graph()
        write_graph_pbtxt(graph, self._checkpoint_dir)
        from ..summary.graph_def import build_meta_graph_def
        saver = self._get_saver()
        self._summary_writer.add_graph(graph)
        self._summary_writer.add_meta_graph(
            build_meta_graph_def(graph, saver.saver_def if saver is not None else None))
        # This checkpoint is the state at step `global_step`.
        self._save(session, global_step)
        self._timer.update_last_triggered_step(global_step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values) -> None:
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + self._steps_per_run):
            global_step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(global_step):
                self._timer.update_last_triggered_step(global_step)
                if self._save(run_context.session, global_step):
                    run_context.request_stop()

    def end(self, session) -> None:
        last_step = int(session.run(self._global_step_tensor))
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)
        self._summary_writer.flush()

    def _save(self, session, step: int) -> bool:
        """Writes a checkpoint; True if a listener asked to stop training."""
        _log.info("Calling checkpoint listeners before saving checkpoint %d...", step)
        for listener in self._listeners:
            listener.before_save(session, step)
        _log.info("Saving checkpoints for %d into %s.", step, self._save_path)
        self._get_saver().save(session, self._save_path, global_step=step)
        self._summary_writer.add_session_log(
            SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step)
        _log.info("Calling checkpoint listeners after saving checkpoint %d...", step)
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                _log.info("A CheckpointSaverListener requested that training be stopped. "
                          "listener: %s", listener)
                should_stop = True
        return should_stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = get_default_graph().get_collection(GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError(f"No items in collection {GraphKeys.SAVERS}. Please add a saver "
                               "to the collection or provide a saver or scaffold.")
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please "
                               "indicate which one to use by passing it to the constructor.")
        self._saver = savers[0]
        return self._saver


# -- logging and monitoring ------------------------------------------------------------------------
class LoggingTensorHook(SessionRunHook):
    """Logs tensors' values (INFO, on the "tfjupyter" logger) every ``every_n_iter`` steps or
    ``every_n_secs`` seconds, and/or at the end.

    ``tensors`` is a list of tensors or names, or a dict {tag: tensor or name}; ``formatter``
    (dict of values -> str) replaces the default "tag = value, ..." line.
    """

    def __init__(self, tensors: Union[Sequence, Mapping[str, Any]],
                 every_n_iter: Optional[int] = None, every_n_secs: Optional[float] = None,
                 at_end: bool = False, formatter: Optional[Callable[[Dict], str]] = None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs "
                             "must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, Mapping):
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
            # Tensors given in a list are logged under their names (not their repr).
            self._tag_names = {t: t if isinstance(t, str) else getattr(t, "name", str(t))
                               for t in self._tag_order}
        else:
            self._tag_order = sorted(tensors.keys())
            self._tag_names = {tag: tag for tag in self._tag_order}
        self._tensors = dict(tensors)
        self._formatter = formatter
        self._timer = (_NeverTriggerTimer() if only_log_at_end else
                       SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter))
        self._log_at_end = at_end

    def begin(self) -> None:
        self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        if self._should_trigger:
            return SessionRunArgs(self._current_tensors)
        return None

    def _log_tensors(self, tensor_values: Dict) -> None:
        elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
        with np.printoptions(suppress=True):
            if self._formatter:
                _log.info(self._formatter(tensor_values))
                return
            # str(), not format(): f"{np.float32(0.1)}" prints the float64 digits.
            stats = ", ".join(f"{self._tag_names[tag]} = {tensor_values[tag]!s}"
                              for tag in self._tag_order)
            if elapsed_secs is not None:
                _log.info("%s (%.3f sec)", stats, elapsed_secs)
            else:
                _log.info("%s", stats)

    def after_run(self, run_context, run_values) -> None:
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session) -> None:
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))


class StepCounterHook(SessionRunHook):
    """Logs the training speed (global steps per second) every ``every_n_steps`` steps or
    ``every_n_secs`` seconds, and writes it as the summary ``global_step/sec`` when given a
    ``summary_writer`` or an ``output_dir``."""

    def __init__(self, every_n_steps: Optional[int] = 100, every_n_secs: Optional[float] = None,
                 output_dir: Optional[str] = None, summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step: Optional[int] = None
        self._steps_per_run = 1
        self._stuck_warnings = 0

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = SummaryWriterCache.get(self._output_dir)
        self._global_step_tensor = _global_step_read("StepCounterHook")
        self._summary_tag = training_util.get_global_step().op.name + "/sec"

    def after_create_session(self, session, coord) -> None:
        # A recreated session starts a new measurement.
        self._last_global_step = None
        self._timer.reset()

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def _log_and_record(self, elapsed_steps: int, elapsed_time: float, global_step: int) -> None:
        steps_per_sec = elapsed_steps / elapsed_time if elapsed_time > 0 else float("inf")
        if self._summary_writer is not None:
            summary = Summary(value=[Summary.Value(tag=self._summary_tag,
                                                   simple_value=steps_per_sec)])
            self._summary_writer.add_summary(summary, global_step)
        _log.info("%s: %g", self._summary_tag, steps_per_sec)

    def after_run(self, run_context, run_values) -> None:
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + self._steps_per_run):
            global_step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(global_step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, global_step)
        if stale_global_step == self._last_global_step and self._stuck_warnings < 5:
            # Some optimizers (SyncReplicasOptimizer's workers) do not increment it each step.
            self._stuck_warnings += 1
            _log.warning("It seems that global step (tf.train.get_global_step) has not been "
                         "increased. Current value (could be stable): %s vs previous value: %s. "
                         "You could increase the global step by passing "
                         "tf.train.get_global_step() to Optimizer.apply_gradients or "
                         "Optimizer.minimize.", stale_global_step, self._last_global_step)
        self._last_global_step = stale_global_step

    def end(self, session) -> None:
        if self._summary_writer is not None:
            self._summary_writer.flush()


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Checks ``loss_tensor`` every step: on NaN, raises NanLossDuringTrainingError (or, with
    ``fail_on_nan_loss=False``, logs a warning and requests a stop)."""

    def __init__(self, loss_tensor, fail_on_nan_loss: bool = True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values) -> None:
        if np.any(np.isnan(run_values.results)):
            failure_message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                _log.error(failure_message)
                raise NanLossDuringTrainingError
            _log.warning(failure_message)
            run_context.request_stop()


class SummarySaverHook(SessionRunHook):
    """Runs the summary op (``summary_op``, or the scaffold's) every ``save_steps`` steps or
    ``save_secs`` seconds and writes its result to ``output_dir`` (or ``summary_writer``)."""

    def __init__(self, save_steps: Optional[int] = None, save_secs: Optional[float] = None,
                 output_dir: Optional[str] = None, summary_writer=None, scaffold=None,
                 summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = SummaryWriterCache.get(self._output_dir)
        self._next_step: Optional[int] = None
        self._global_step_tensor = _global_step_read("SummarySaverHook")

    def before_run(self, run_context):
        self._request_summary = (self._next_step is None
                                 or self._timer.should_trigger_for_step(self._next_step))
        requests: Dict[str, Any] = {"global_step": self._global_step_tensor}
        if self._request_summary:
            summary_op = self._get_summary_op()
            if summary_op is not None:
                requests["summary"] = summary_op
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values) -> None:
        if not self._summary_writer:
            return
        global_step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            global_step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START),
                                                 global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session=None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_op(self) -> Optional[List]:
        summary_op = self._summary_op if self._summary_op is not None else \
            self._scaffold.summary_op
        if summary_op is None:
            return None
        return summary_op if isinstance(summary_op, list) else [summary_op]


# -- waiting, final ops, feeds ---------------------------------------------------------------------
class GlobalStepWaiterHook(SessionRunHook):
    """Delays the first step until the global step reaches ``wait_until_step`` (non-chief
    workers wait for the chief to get going). The wait polls every half second and is
    bounded: after ``max_wait_secs`` it raises DeadlineExceededError (None: no bound, as
    TensorFlow)."""

    _POLL_SECS = 0.5

    def __init__(self, wait_until_step: int, max_wait_secs: Optional[float] = 7200):
        self._wait_until_step = wait_until_step
        self._max_wait_secs = max_wait_secs

    def begin(self) -> None:
        self._worker_is_started = False
        self._global_step_tensor = _global_step_read("_GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        _log.info("Waiting for global step %d before starting training.", self._wait_until_step)
        start = time.monotonic()
        last_logged_step = 0
        while True:
            current_step = int(run_context.session.run(self._global_step_tensor))
            if current_step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            waited = time.monotonic() - start
            if self._max_wait_secs is not None and waited >= self._max_wait_secs:
                raise errors.DeadlineExceededError(
                    None, None, f"Global step did not reach {self._wait_until_step} within "
                    f"{self._max_wait_secs:g} secs (it is {current_step}); is the chief "
                    "worker training?")
            if current_step - last_logged_step > 1000:
                _log.info("Waiting for global step %d before starting training. Current step "
                          "is %d.", self._wait_until_step, current_step)
                last_logged_step = current_step
            pause = self._POLL_SECS
            if self._max_wait_secs is not None:
                pause = min(pause, self._max_wait_secs - waited)
            time.sleep(pause)


class FinalOpsHook(SessionRunHook):
    """Runs ``final_ops`` when the session ends; their values are in ``final_ops_values``."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session) -> None:
        if self._final_ops is None:
            return
        try:
            self._final_ops_values = session.run(self._final_ops,
                                                 feed_dict=self._final_ops_feed_dict)
        except (errors.OutOfRangeError, StopIteration):
            _log.warning("An OutOfRangeError or StopIteration exception is raised by the code in "
                         "FinalOpsHook. This typically means the Ops running by the FinalOpsHook "
                         "have a dependency back to some input source, which should not happen. "
                         "The final ops should only read variables, not another batch of input.")
            raise


class FeedFnHook(SessionRunHook):
    """Feeds ``feed_fn()`` (a dict) to every step."""

    def __init__(self, feed_fn: Callable[[], Dict]):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())
