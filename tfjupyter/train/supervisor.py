"""``tf.train.Supervisor`` (TensorFlow 0.8): a session manager, a coordinator and the
chief's background services (checkpoints, summaries, steps/sec) in one object.

    sv = tf.train.Supervisor(logdir="/tmp/train", is_chief=(task_index == 0))
    with sv.managed_session(server.target) as sess:
        while not sv.should_stop() and step < 1000:
            _, step = sess.run([train_op, global_step])

The chief restores the latest checkpoint of ``logdir`` or initializes the model, writes the
graph, and starts a thread saving a checkpoint every ``save_model_secs`` and threads writing
summaries every ``save_summaries_secs``; other tasks wait for the chief. All the threads are
stopped and joined by ``stop()`` (which ``managed_session`` calls on the way out).
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import Callable, List, Optional

from ..framework import dtypes
from ..framework.ops import Graph, GraphKeys, get_default_graph
from ..ops import control_flow_ops
from ..summary import SessionLog, Summary
from .. import variables
from . import training_util
from .basic_session_run_hooks import write_graph_pbtxt
from .coordinator import Coordinator, LooperThread
from .session_manager import SessionManager

__all__ = ["Supervisor"]

_log = logging.getLogger("tfjupyter")
_READY_FOR_LOCAL_INIT_OP = getattr(GraphKeys, "READY_FOR_LOCAL_INIT_OP", "ready_for_local_init_op")


class Supervisor:
    """Initializes or restores the model, waits for it on non-chief tasks, runs the chief's
    checkpoint and summary services, and coordinates stopping.

    Arguments left at ``Supervisor.USE_DEFAULT`` come from the graph's collections (INIT_OP,
    READY_OP, SAVERS, SUMMARY_OP, GLOBAL_STEP, ...) or get the standard default; ``None``
    disables the corresponding function. The graph is finalized.
    """

    USE_DEFAULT = 0

    def __init__(self, graph: Optional[Graph] = None, ready_op=USE_DEFAULT,
                 ready_for_local_init_op=USE_DEFAULT, is_chief: bool = True,
                 init_op=USE_DEFAULT, init_feed_dict=None, local_init_op=USE_DEFAULT,
                 logdir: Optional[str] = None, summary_op=USE_DEFAULT, saver=USE_DEFAULT,
                 global_step=USE_DEFAULT, save_summaries_secs: float = 120,
                 save_model_secs: float = 600, recovery_wait_secs: float = 30,
                 stop_grace_secs: float = 120, checkpoint_basename: str = "model.ckpt",
                 session_manager: Optional[SessionManager] = None,
                 summary_writer=USE_DEFAULT, init_fn: Optional[Callable] = None,
                 local_init_run_options=None):
        graph = graph if graph is not None else get_default_graph()
        self._graph = graph
        with graph.as_default():
            self._init_ready_op(ready_op, ready_for_local_init_op)
            self._init_init_op(init_op, init_feed_dict)
            self._init_local_init_op(local_init_op)
            self._init_saver(saver)
            self._init_summary_op(summary_op)
            self._init_global_step(global_step)
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._local_init_run_options = local_init_run_options
        # Only the chief writes checkpoints and events.
        self._logdir: Optional[str] = None
        self._save_summaries_secs: Optional[float] = None
        self._save_model_secs: Optional[float] = None
        self._save_path: Optional[str] = None
        self._summary_writer = None
        self._graph_added_to_summary = False
        if self._is_chief:
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if self._logdir:
                self._save_path = os.path.join(self._logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                if self._logdir:
                    from ..summary import FileWriter
                    self._summary_writer = FileWriter(self._logdir)
            else:
                self._summary_writer = summary_writer
        self._init_session_manager(session_manager)
        self._verify_setup()
        graph.finalize()

    # -- defaults ----------------------------------------------------------------------------------
    def _init_session_manager(self, session_manager: Optional[SessionManager]) -> None:
        if session_manager is None:
            session_manager = SessionManager(
                local_init_op=self._local_init_op, ready_op=self._ready_op,
                ready_for_local_init_op=self._ready_for_local_init_op, graph=self._graph,
                recovery_wait_secs=self._recovery_wait_secs,
                local_init_run_options=self._local_init_run_options)
        self._session_manager = session_manager

    def _get_first_op_from_collection(self, key: str):
        op_list = self._graph.get_collection(key)
        if len(op_list) > 1:
            _log.info("Found %d %s operations. Returning the first one.", len(op_list), key)
        return op_list[0] if op_list else None

    def _init_ready_op(self, ready_op, ready_for_local_init_op) -> None:
        if ready_op is Supervisor.USE_DEFAULT:
            ready_op = self._get_first_op_from_collection(GraphKeys.READY_OP)
            if ready_op is None:
                ready_op = variables.report_uninitialized_variables()
                self._graph.add_to_collection(GraphKeys.READY_OP, ready_op)
        self._ready_op = ready_op
        # None by default, for programs written before it existed.
        if ready_for_local_init_op is Supervisor.USE_DEFAULT:
            ready_for_local_init_op = self._get_first_op_from_collection(_READY_FOR_LOCAL_INIT_OP)
        self._ready_for_local_init_op = ready_for_local_init_op

    def _init_init_op(self, init_op, init_feed_dict) -> None:
        if init_op is Supervisor.USE_DEFAULT:
            init_op = self._get_first_op_from_collection(GraphKeys.INIT_OP)
            if init_op is None:
                init_op = variables.global_variables_initializer()
                self._graph.add_to_collection(GraphKeys.INIT_OP, init_op)
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict

    def _init_local_init_op(self, local_init_op) -> None:
        if local_init_op is Supervisor.USE_DEFAULT:
            local_init_op = self._get_first_op_from_collection(GraphKeys.LOCAL_INIT_OP)
            if local_init_op is None:
                local_init_op = control_flow_ops.group(variables.local_variables_initializer())
                self._graph.add_to_collection(GraphKeys.LOCAL_INIT_OP, local_init_op)
        self._local_init_op = local_init_op

    def _init_saver(self, saver) -> None:
        if saver is Supervisor.USE_DEFAULT:
            saver = self._get_first_op_from_collection(GraphKeys.SAVERS)
            if saver is None and variables.global_variables():
                from .saver import Saver
                saver = Saver()
                self._graph.add_to_collection(GraphKeys.SAVERS, saver)
        self._saver = saver

    def _init_summary_op(self, summary_op) -> None:
        if summary_op is Supervisor.USE_DEFAULT:
            summary_op = self._get_first_op_from_collection(GraphKeys.SUMMARY_OP)
            if summary_op is None:
                from ..summary import merge_all
                summary_op = merge_all()
                if summary_op is not None:
                    self._graph.add_to_collection(GraphKeys.SUMMARY_OP, summary_op)
        self._summary_op = summary_op

    def _init_global_step(self, global_step) -> None:
        if global_step is Supervisor.USE_DEFAULT:
            global_step = self._get_first_op_from_collection(GraphKeys.GLOBAL_STEP)
            if global_step is None:
                global_step = self._default_global_step_tensor()
                if global_step is not None:
                    self._graph.add_to_collection(GraphKeys.GLOBAL_STEP, global_step)
        self._global_step = global_step

    def _default_global_step_tensor(self):
        try:
            gs = self._graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
        if gs.dtype.base_dtype in (dtypes.int32, dtypes.int64):
            return gs
        _log.warning("Found 'global_step' is not an int type: %s", gs.dtype)
        return None

    def _verify_setup(self) -> None:
        """Replicas share their variables through devices: a non-chief needs them placed."""
        if not self._is_chief:
            for op in self._graph.get_operations():
                if op.type in ("Variable", "VariableV2") and not op.device:
                    raise ValueError("When using replicas, all Variables must have their device "
                                     f"set: {op}")

    # -- properties --------------------------------------------------------------------------------
    is_chief = property(lambda self: self._is_chief)
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    # -- sessions and services ---------------------------------------------------------------------
    def _write_graph(self) -> None:
        """Writes graph.pbtxt to logdir and the graph to the event file (once)."""
        if self._logdir:
            write_graph_pbtxt(self._graph, self._logdir)
        if self._summary_writer and not self._graph_added_to_summary:
            from ..summary.graph_def import build_meta_graph_def
            self._summary_writer.add_graph(self._graph)
            self._summary_writer.add_meta_graph(build_meta_graph_def(
                self._graph, self._saver.saver_def if self._saver else None))
            self._graph_added_to_summary = True

    def start_standard_services(self, sess) -> List:
        """Starts the chief's checkpoint, summary and step-counter threads (as configured);
        returns them. They stop when the coordinator stops."""
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because only "
                               "chief supervisors can write events.")
        if not self._logdir:
            _log.warning("Standard services need a 'logdir' passed to the SessionManager")
            return []
        if self._global_step is not None and self._summary_writer:
            # TensorBoard purges events newer than a START's step (from a crashed run).
            current_step = training_util.global_step(sess, self._global_step)
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START),
                                                 current_step)
        threads: List[LooperThread] = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(_SVSummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(_SVStepCounterThread(self, sess))
        if self.saver and self._save_model_secs:
            threads.append(_SVTimerCheckpointThread(self, sess))
        for t in threads:
            t.start()
        return threads

    def prepare_or_wait_for_session(self, master: str = "", config=None,
                                    wait_for_checkpoint: bool = False,
                                    max_wait_secs: float = 7200,
                                    start_standard_services: bool = True):
        """The chief: a session restored from logdir or initialized (and the services
        started); other tasks: a session once the chief has initialized the model."""
        # A Supervisor may be used for several sessions in a row.
        self._coord.clear_stop()
        if self._summary_writer:
            self._summary_writer.reopen()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self.init_op, saver=self.saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
                config=config, init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                _log.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config,
                                                          max_wait_secs=max_wait_secs)
        if start_standard_services:
            _log.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    def start_queue_runners(self, sess, queue_runners=None) -> List:
        """Starts the queue runners (default: the graph's) under this supervisor's
        coordinator; returns their threads."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs: Optional[float], target: Callable, args=None,
             kwargs=None) -> LooperThread:
        """Starts a thread calling ``target(*args, **kwargs)`` every timer_interval_secs until
        the supervisor stops."""
        looper = LooperThread(self._coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    def stop(self, threads=None, close_summary_writer: bool = True,
             ignore_live_threads: bool = False) -> None:
        """Stops the services and queue runners and waits for them (at most stop_grace_secs
        once asked); re-raises an exception reported to the coordinator."""
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            # Last, in case a service thread was still writing.
            if close_summary_writer and self._summary_writer:
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex=None) -> None:
        """Asks every thread to stop; ``ex`` is re-raised by stop()."""
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def stop_on_exception(self):
        """``with sv.stop_on_exception():`` reports an exception of the block to request_stop."""
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def summary_computed(self, sess, summary, global_step: Optional[int] = None) -> None:
        """Writes a summary computed by the caller (at the current global step by default)."""
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self.global_step is not None:
            global_step = training_util.global_step(sess, self.global_step)
        self._summary_writer.add_summary(summary, global_step)

    @contextlib.contextmanager
    def managed_session(self, master: str = "", config=None,
                        start_standard_services: bool = True,
                        close_summary_writer: bool = True):
        """A session for the ``with`` block; on the way out the services and queue runners are
        stopped and joined and the session closed. An exception in the block stops them too
        and is re-raised (OutOfRangeError just ends training)."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services)
            yield sess
        except Exception as e:
            self.request_stop(e)
        finally:
            try:
                # Re-raises what a thread (or the block) reported.
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    try:
                        sess.close()
                    except Exception:  # closing also ends blocked queue ops; errors don't matter
                        pass


# TensorFlow 0.x names.
Supervisor.PrepareSession = Supervisor.prepare_or_wait_for_session
Supervisor.StartQueueRunners = Supervisor.start_queue_runners
Supervisor.StartStandardServices = Supervisor.start_standard_services
Supervisor.Stop = Supervisor.stop
Supervisor.RequestStop = Supervisor.request_stop
Supervisor.Loop = Supervisor.loop
Supervisor.ShouldStop = Supervisor.should_stop
Supervisor.StopOnException = Supervisor.stop_on_exception
Supervisor.WaitForStop = Supervisor.wait_for_stop
Supervisor.SummaryComputed = Supervisor.summary_computed


# -- the chief's service threads -------------------------------------------------------------------
class _SVSummaryThread(LooperThread):
    """Runs the summary op every save_summaries_secs and writes the result."""

    def __init__(self, sv: Supervisor, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self.name = "SVSummaryThread"
        self._sv = sv
        self._sess = sess

    def run_loop(self) -> None:
        if self._sv.global_step is not None:
            summary_strs, global_step = self._sess.run([self._sv.summary_op,
                                                        self._sv.global_step])
        else:
            summary_strs, global_step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer:
            _log.info("Recording summary at step %s.", global_step)
            self._sv.summary_writer.add_summary(summary_strs, global_step)


class _SVStepCounterThread(LooperThread):
    """Writes global steps per second (summary '<global step>/sec') every save_summaries_secs."""

    def __init__(self, sv: Supervisor, sess, step_counter=None):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self.name = "SVStepCounterThread"
        self._sv = sv
        self._sess = sess
        self._last_time = 0.0
        self._last_step = 0
        self._step_counter = sv.global_step if step_counter is None else step_counter
        self._summary_tag = f"{self._step_counter.op.name}/sec"
        self._logged = 0

    def start_loop(self) -> None:
        self._last_time = time.time()
        self._last_step = training_util.global_step(self._sess, self._step_counter)

    def run_loop(self) -> None:
        current_step = training_util.global_step(self._sess, self._step_counter)
        added_steps = current_step - self._last_step
        self._last_step = current_step
        current_time = time.time()
        elapsed_time = current_time - self._last_time
        self._last_time = current_time
        steps_per_sec = added_steps / elapsed_time if elapsed_time > 0 else float("inf")
        summary = Summary(value=[Summary.Value(tag=self._summary_tag,
                                               simple_value=steps_per_sec)])
        if self._sv.summary_writer:
            self._sv.summary_writer.add_summary(summary, current_step)
        if self._logged < 10:
            self._logged += 1
            _log.info("%s: %g", self._summary_tag, steps_per_sec)


class _SVTimerCheckpointThread(LooperThread):
    """Saves a checkpoint to save_path every save_model_secs (first one at start)."""

    def __init__(self, sv: Supervisor, sess):
        super().__init__(sv.coord, sv.save_model_secs)
        self.name = "SVTimerCheckpointThread"
        self._sv = sv
        self._sess = sess

    def run_loop(self) -> None:
        _log.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            current_step = training_util.global_step(self._sess, self._sv.global_step)
            self._sv.summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._sv.save_path),
                current_step)
