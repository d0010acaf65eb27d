"""``tf.train.MonitoredSession`` and friends: a session that initializes (or restores, or
waits for) its model, calls hooks around every step, runs queue runners, and recovers from
a lost worker or parameter server by creating a new session.

    with tf.train.MonitoredTrainingSession(checkpoint_dir=logdir,
                                           hooks=[tf.train.StopAtStepHook(last_step=1000)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)

Layers, outermost first (as TensorFlow 1.x)::

    MonitoredSession       begin()/end() of the hooks, context manager, should_stop
    _RecoverableSession    AbortedError/UnavailableError: close, create a new session, go on
    _CoordinatedSession    the Coordinator of the queue-runner threads; their errors surface here
    _HookedSession         before_run/after_run of the hooks around each run
    the tf.Session         made by a SessionCreator (ChiefSessionCreator, WorkerSessionCreator)
"""
from __future__ import annotations

import collections
import inspect
import logging
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..client.config import RunMetadata, RunOptions
from ..framework import errors
from ..framework.ops import GraphKeys, Operation, get_default_graph
from ..ops import control_flow_ops
from ..ops.lookup_ops import tables_initializer
from .. import variables
from . import basic_session_run_hooks as hooks_lib
from .basic_session_run_hooks import SessionRunArgs, SessionRunContext, SessionRunValues
from .coordinator import Coordinator
from .queue_runner import start_queue_runners
from .session_manager import SessionManager

__all__ = ["Scaffold", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator",
           "MonitoredSession", "SingularMonitoredSession", "MonitoredTrainingSession"]

_log = logging.getLogger("tfjupyter")

# Errors that mean "a task of the cluster went away": the session is recreated.
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)
_READY_FOR_LOCAL_INIT_OP = getattr(GraphKeys, "READY_FOR_LOCAL_INIT_OP", "ready_for_local_init_op")
USE_DEFAULT = object()


# -- Scaffold --------------------------------------------------------------------------------------
class Scaffold:
    """The ops a monitored session needs to create, initialize and check a model: init_op,
    ready_op, ready_for_local_init_op, local_init_op, summary_op and saver. ``finalize()``
    fills in the missing ones (from the graph's collections, else defaults) and finalizes
    the graph. ``init_fn(scaffold, session)`` runs after init_op."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None, saver=None,
                 copy_from_scaffold: Optional["Scaffold"] = None, local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")

            def coalesce(a, b):
                return a if a is not None else b
            init_op = coalesce(init_op, copy_from_scaffold.init_op)
            init_feed_dict = coalesce(init_feed_dict, copy_from_scaffold.init_feed_dict)
            init_fn = coalesce(init_fn, copy_from_scaffold._user_init_fn)
            ready_op = coalesce(ready_op, copy_from_scaffold.ready_op)
            ready_for_local_init_op = coalesce(ready_for_local_init_op,
                                               copy_from_scaffold.ready_for_local_init_op)
            local_init_op = coalesce(local_init_op, copy_from_scaffold.local_init_op)
            local_init_feed_dict = coalesce(local_init_feed_dict,
                                            copy_from_scaffold.local_init_feed_dict)
            summary_op = coalesce(summary_op, copy_from_scaffold.summary_op)
            saver = coalesce(saver, copy_from_scaffold.saver)
        self._user_init_fn = init_fn
        # init_fn gets the scaffold too, so that it can find the saver.
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> "Scaffold":
        """Creates the missing ops and finalizes the default graph."""
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default(
                "init_op", GraphKeys.INIT_OP, variables.global_variables_initializer)
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default(
                "ready_op", GraphKeys.READY_OP, variables.report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", _READY_FOR_LOCAL_INIT_OP,
                lambda: variables.report_uninitialized_variables(variables.global_variables()))
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", GraphKeys.LOCAL_INIT_OP, Scaffold.default_local_init_op)
        if self._summary_op is None:
            from ..summary import merge_all
            self._summary_op = Scaffold.get_or_default("summary_op", GraphKeys.SUMMARY_OP,
                                                       merge_all)
        if self._saver is None:
            self._saver = _get_saver_or_default()
        self._saver.build()
        get_default_graph().finalize()
        _log.info("Graph was finalized.")
        return self

    init_fn = property(lambda self: self._init_fn)
    init_op = property(lambda self: self._init_op)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)
    init_feed_dict = property(lambda self: self._init_feed_dict)

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor: Callable):
        """The one element of the collection, else ``default_constructor()`` (added to it)."""
        elements = get_default_graph().get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(f'More than one item in the collection "{collection_key}". '
                                   "Please indicate which one to use by passing it to the "
                                   f"tf.Scaffold constructor as:  tf.Scaffold({arg_name}=item "
                                   "to use)")
            return elements[0]
        op = default_constructor()
        if op is not None:
            get_default_graph().add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op() -> Operation:
        """TF's default: initializes the local variables and the lookup tables (a table made
        in an Estimator's input_fn or model_fn is ready at the first step)."""
        return control_flow_ops.group(variables.local_variables_initializer(),
                                      tables_initializer())


def _get_saver_or_default():
    """The one Saver of the SAVERS collection, else a new sharded one (added to it)."""
    graph = get_default_graph()
    savers = graph.get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please "
                               "indicate which one to use by passing it to the constructor.")
        return savers[0]
    from .saver import Saver
    saver = Saver(sharded=True, allow_empty=True)
    graph.add_to_collection(GraphKeys.SAVERS, saver)
    return saver


# -- session creators ------------------------------------------------------------------------------
class SessionCreator:
    """Makes a ready-to-use tf.Session: ``create_session()``."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for "
                                  f"{type(self).__name__}.")


class _ScaffoldSessionCreator(SessionCreator):
    """Shared by the chief's and the workers' creators: a SessionManager for the scaffold."""

    _scaffold: Scaffold
    _session_manager: Optional[SessionManager]

    def _get_session_manager(self) -> SessionManager:
        if self._session_manager is None:
            self._session_manager = SessionManager(
                local_init_op=self._scaffold.local_init_op,
                local_init_feed_dict=self._scaffold.local_init_feed_dict,
                ready_op=self._scaffold.ready_op,
                ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                graph=get_default_graph())
        return self._session_manager


class ChiefSessionCreator(_ScaffoldSessionCreator):
    """The chief's sessions: restored from the latest checkpoint of ``checkpoint_dir`` (or
    ``checkpoint_filename_with_path``) if there is one, else initialized."""

    def __init__(self, scaffold: Optional[Scaffold] = None, master: str = "", config=None,
                 checkpoint_dir: Optional[str] = None,
                 checkpoint_filename_with_path: Optional[str] = None):
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path
        self._scaffold = scaffold or Scaffold()
        self._session_manager: Optional[SessionManager] = None
        self._master = master
        self._config = config

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().prepare_session(
            self._master, saver=self._scaffold.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config, init_op=self._scaffold.init_op,
            init_feed_dict=self._scaffold.init_feed_dict, init_fn=self._scaffold.init_fn)


class WorkerSessionCreator(_ScaffoldSessionCreator):
    """A non-chief worker's sessions: waits (at most ``max_wait_secs``) until the chief has
    initialized the model."""

    def __init__(self, scaffold: Optional[Scaffold] = None, master: str = "", config=None,
                 max_wait_secs: float = 30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._session_manager: Optional[SessionManager] = None
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs)


# -- fetch flattening ------------------------------------------------------------------------------
def _flatten_fetches(graph, fetches, leaves: List, index: Dict) -> Callable[[List], Any]:
    """Appends the graph elements of a fetch structure to ``leaves`` (each once) and returns
    a function rebuilding the structure from the values of ``leaves``. Raises on anything
    that is not a fetch (the caller then lets the session report it)."""
    if fetches is None:
        raise TypeError("None is not a fetch")
    if isinstance(fetches, (list, tuple)) and not hasattr(fetches, "_as_graph_element"):
        builders = [_flatten_fetches(graph, f, leaves, index) for f in fetches]
        cls = type(fetches)
        if hasattr(fetches, "_fields"):  # namedtuple
            return lambda v: cls(*[b(v) for b in builders])
        if cls is list:
            return lambda v: [b(v) for b in builders]
        return lambda v: cls(b(v) for b in builders)
    if isinstance(fetches, collections.abc.Mapping):
        keys = list(fetches.keys())
        builders = [_flatten_fetches(graph, fetches[k], leaves, index) for k in keys]
        cls = type(fetches)
        if cls is dict:
            return lambda v: {k: b(v) for k, b in zip(keys, builders)}
        return lambda v: cls(zip(keys, [b(v) for b in builders]))
    element = graph.as_graph_element(fetches, allow_tensor=True, allow_operation=True)
    i = index.get(element)
    if i is None:
        i = index[element] = len(leaves)
        leaves.append(element)
    return lambda v: v[i]


# -- the session layers ----------------------------------------------------------------------------
class _WrappedSession:
    """A session wrapping another; ``should_stop`` asks every layer."""

    def __init__(self, sess):
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(sess, _WrappedSession)

    @property
    def graph(self):
        return self._sess.graph

    @property
    def sess_str(self) -> str:
        return self._sess.sess_str

    def should_stop(self) -> bool:
        if self._check_stop():
            return True
        if self._sess:
            return self._wrapped_is_stoppable and self._sess.should_stop()
        return True

    def _check_stop(self) -> bool:
        return False

    def close(self) -> None:
        if self._sess:
            try:
                self._sess.close()
            except _PREEMPTION_ERRORS as e:
                _log.error("An error occurred when attempting to close the session. This may be "
                           "due to a preemption in a connected worker or parameter server. "
                           "Error: %s", e)
            finally:
                self._sess = None

    def run(self, *args, **kwargs):
        return self._sess.run(*args, **kwargs)

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        run_with_hooks = run_with_hooks or self.run
        return step_fn(_MonitoredSession.StepContext(raw_session, run_with_hooks))


class _RecoverableSession(_WrappedSession):
    """Recreates the session (through the creator) when a run fails with AbortedError or
    UnavailableError, and runs the step again: training survives a restarted ps or worker.
    Creation is retried with a growing pause (at most 10 s) for as long as it fails so."""

    _MAX_RETRY_PAUSE_SECS = 10.0

    def __init__(self, sess_creator):
        self._sess_creator = sess_creator
        super().__init__(self._create_session())

    def _create_session(self):
        pause = 0.05
        while True:
            try:
                return self._sess_creator.create_session()
            except _PREEMPTION_ERRORS as e:
                _log.info("An error was raised while a session was being created. This may be "
                          "due to a preemption of a connected worker or parameter server. A new "
                          "session will be created. Error: %s", e)
                time.sleep(pause)
                pause = min(pause * 2, self._MAX_RETRY_PAUSE_SECS)

    def _check_stop(self) -> bool:
        try:
            if self._sess:
                return self._sess._check_stop()
            return True
        except _PREEMPTION_ERRORS as e:
            _log.info("An error was raised while considering whether the session is complete. "
                      "This may be due to a preemption in a connected worker or parameter "
                      "server. The current session will be closed and a new session will be "
                      "created. Error: %s", e)
            self.close()
            self._sess = self._create_session()
            return False   # the computation goes on in the new session
        except Exception:
            return True    # should_stop reports a failure by saying "stop", not by raising

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                                      run_metadata=run_metadata)
            except _PREEMPTION_ERRORS as e:
                _log.info("An error was raised. This may be due to a preemption in a connected "
                          "worker or parameter server. The current session will be closed and a "
                          "new session will be created. Error: %s", e)
                self.close()
                self._sess = None

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run_step_fn(step_fn, self._sess_creator.tf_sess,
                                              self._sess.run)
            except _PREEMPTION_ERRORS as e:
                _log.info("An error was raised. This may be due to a preemption in a connected "
                          "worker or parameter server. The current session will be closed and a "
                          "new session will be created. Error: %s", e)
                self.close()
                self._sess = None


class _CoordinatedSession(_WrappedSession):
    """Owns the Coordinator of the session's threads: an error a thread reports is raised by
    the next run or should_stop; close() stops and joins the threads, then the session."""

    def __init__(self, sess, coord: Coordinator, stop_grace_period_secs: float = 120):
        super().__init__(sess)
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def _check_stop(self) -> bool:
        self._coord.raise_requested_exception()
        return self._coord.should_stop()

    def close(self) -> None:
        self._coord.request_stop()
        # A thread blocked in a step (the sync chief's queue runner waiting for gradients that
        # will never come) would make join() wait in vain: cancel such steps (TF hangs here).
        raw = self._sess
        while raw is not None and not hasattr(raw, "cancel_running_steps"):
            raw = getattr(raw, "_sess", None)
        if raw is not None:
            raw.cancel_running_steps("the monitored session is closing")
        try:
            self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs,
                             ignore_live_threads=True)
        finally:
            try:
                _WrappedSession.close(self)
            except Exception:  # join() already reported what matters
                pass

    def _reraise_root_cause(self, original: BaseException) -> None:
        """A failed step may be the consequence of a thread's preemption error: raise that."""
        try:
            self._coord.raise_requested_exception()
        except _PREEMPTION_ERRORS:
            raise
        except Exception:
            pass
        raise original

    def run(self, *args, **kwargs):
        try:
            return self._sess.run(*args, **kwargs)
        except _PREEMPTION_ERRORS:
            raise
        except Exception as e:
            self._reraise_root_cause(e.with_traceback(sys.exc_info()[2]))

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        try:
            return self._sess.run_step_fn(step_fn, raw_session, run_with_hooks)
        except _PREEMPTION_ERRORS:
            raise
        except Exception as e:
            self._reraise_root_cause(e.with_traceback(sys.exc_info()[2]))


class _HookedSession(_WrappedSession):
    """Calls the hooks' before_run/after_run around each run, adding their fetches, feeds
    and options to the step."""

    def __init__(self, sess, hooks: Sequence[hooks_lib.SessionRunHook]):
        super().__init__(sess)
        self._hooks = list(hooks)
        self._should_stop = False

    def _check_stop(self) -> bool:
        return self._should_stop

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        run_context = SessionRunContext(original_args=SessionRunArgs(fetches, feed_dict),
                                        session=self._sess)
        options = _copy_run_options(options)
        hook_fetches: Dict[hooks_lib.SessionRunHook, Any] = {}
        feed_dict = self._call_hook_before_run(run_context, hook_fetches, feed_dict, options)
        run_metadata = run_metadata if run_metadata is not None else RunMetadata()
        caller, results = self._run_all(fetches, hook_fetches, feed_dict, options, run_metadata)
        for hook in self._hooks:
            hook.after_run(run_context, SessionRunValues(results=results.get(hook),
                                                         options=options,
                                                         run_metadata=run_metadata))
        self._should_stop = self._should_stop or run_context.stop_requested
        return caller

    def _run_all(self, fetches, hook_fetches: Dict, feed_dict, options, run_metadata):
        """One session.run for the caller's and the hooks' fetches, as a flat list of graph
        elements (so that the session's plan cache recognizes the step)."""
        graph = self._sess.graph
        leaves: List = []
        index: Dict = {}
        try:
            build_caller = _flatten_fetches(graph, fetches, leaves, index)
            builders = {hook: _flatten_fetches(graph, f, leaves, index)
                        for hook, f in hook_fetches.items()}
        except Exception:
            # Not a plain fetch structure: the session reports what is wrong with it.
            outputs = self._sess.run({"caller": fetches, **{id(h): f for h, f in
                                                            hook_fetches.items()}},
                                     feed_dict=feed_dict, options=options,
                                     run_metadata=run_metadata)
            return outputs["caller"], {h: outputs[id(h)] for h in hook_fetches}
        values = self._sess.run(leaves, feed_dict=feed_dict, options=options,
                                run_metadata=run_metadata)
        return build_caller(values), {hook: b(values) for hook, b in builders.items()}

    def _call_hook_before_run(self, run_context, hook_fetches: Dict, user_feed_dict, options):
        hook_feeds: Dict = {}
        for hook in self._hooks:
            request = hook.before_run(run_context)
            if request is None:
                continue
            if request.fetches is not None:
                hook_fetches[hook] = request.fetches
            if request.feed_dict:
                _raise_if_feeds_intersect(hook_feeds, request.feed_dict,
                                          "Same tensor is fed by two hooks.")
                hook_feeds.update(request.feed_dict)
            if request.options:
                _merge_run_options(options, request.options)
        if not hook_feeds:
            return user_feed_dict
        if not user_feed_dict:
            return hook_feeds
        _raise_if_feeds_intersect(user_feed_dict, hook_feeds,
                                  "Same tensor is fed by a SessionRunHook and user.")
        hook_feeds.update(user_feed_dict)
        return hook_feeds


def _raise_if_feeds_intersect(feeds1: Dict, feeds2: Dict, message: str) -> None:
    intersection = set(feeds1.keys()) & set(feeds2.keys())
    if intersection:
        raise RuntimeError(message + " Conflict(s): " + str(list(intersection)))


def _copy_run_options(options: Optional[RunOptions]) -> RunOptions:
    """A RunOptions the hooks may add to without changing the caller's."""
    copy = RunOptions()
    if options is not None:
        copy.__dict__.update(vars(options))
    return copy


def _merge_run_options(options: RunOptions, incoming: RunOptions) -> None:
    options.trace_level = max(options.trace_level, incoming.trace_level)
    options.timeout_in_ms = max(options.timeout_in_ms, incoming.timeout_in_ms)
    options.output_partition_graphs = (options.output_partition_graphs
                                       or incoming.output_partition_graphs)


# -- MonitoredSession ------------------------------------------------------------------------------
class _MonitoredSession:
    """The common part of MonitoredSession and SingularMonitoredSession."""

    def __init__(self, session_creator: Optional[SessionCreator],
                 hooks: Optional[Sequence[hooks_lib.SessionRunHook]], should_recover: bool,
                 stop_grace_period_secs: float = 120):
        self._graph_was_finalized = get_default_graph().finalized
        self._graph = get_default_graph()
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._coordinated_creator = self._CoordinatedSessionCreator(
            session_creator=session_creator or ChiefSessionCreator(),
            hooks=self._hooks, stop_grace_period_secs=stop_grace_period_secs)
        try:
            if should_recover:
                self._sess = _RecoverableSession(self._coordinated_creator)
            else:
                self._sess = self._coordinated_creator.create_session()
        except BaseException:
            if not self._graph_was_finalized:
                self._graph._unsafe_unfinalize()
            raise

    @property
    def graph(self):
        """The graph this session runs."""
        return self._tf_sess().graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs ``fetches`` like Session.run, calling the hooks around the step."""
        if self._sess is None:
            raise RuntimeError("Attempted to use a closed MonitoredSession.")
        return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                              run_metadata=run_metadata)

    def run_step_fn(self, step_fn: Callable):
        """Calls ``step_fn(step_context)``: it may run ``step_context.session`` (no hooks) and
        ``step_context.run_with_hooks(...)``, and end training with
        ``step_context.request_stop()``. Returns what step_fn returns."""
        params = tuple(inspect.signature(step_fn).parameters)
        if params not in (("step_context",), ("self", "step_context")):
            raise ValueError("`step_fn` may either have one `step_context` argument, or `self` "
                             "and `step_context` arguments if it's an instance method. Got "
                             f"{params} instead.")
        if self._sess is None:
            raise RuntimeError("Attempted to use a closed MonitoredSession.")
        return self._sess.run_step_fn(step_fn, self._tf_sess(), run_with_hooks=None)

    class StepContext:
        """What ``run_step_fn`` gives ``step_fn``."""

        def __init__(self, session, run_with_hooks_fn: Callable):
            self._session = session
            self._run_with_hooks_fn = run_with_hooks_fn

        @property
        def session(self):
            return self._session

        def run_with_hooks(self, *args, **kwargs):
            return self._run_with_hooks_fn(*args, **kwargs)

        def request_stop(self):
            raise StopIteration("step_fn has requested the iterations to stop.")

    def should_stop(self) -> bool:
        return self._sess is None or self._sess.should_stop()

    def close(self) -> None:
        """Calls the hooks' end() and closes the session (stopping its threads)."""
        self._close_internal()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback) -> bool:
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None   # OutOfRange and StopIteration end training cleanly

    class _CoordinatedSessionCreator(SessionCreator):
        """Creates the session, starts its queue runners and tells the hooks."""

        def __init__(self, session_creator: SessionCreator, hooks, stop_grace_period_secs):
            self._session_creator = session_creator
            self._hooks = hooks
            self.coord: Optional[Coordinator] = None
            self.tf_sess = None
            self._stop_grace_period_secs = stop_grace_period_secs

        def create_session(self):
            self.tf_sess = self._session_creator.create_session()
            # No exception type is "clean" here: every thread error must reach the caller.
            self.coord = Coordinator(clean_stop_exception_types=[])
            if self.tf_sess.graph.get_collection(GraphKeys.QUEUE_RUNNERS):
                start_queue_runners(sess=self.tf_sess, coord=self.coord)
            for hook in self._hooks:
                hook.after_create_session(self.tf_sess, self.coord)
            return _CoordinatedSession(_HookedSession(self.tf_sess, self._hooks), self.coord,
                                       self._stop_grace_period_secs)

    def _close_internal(self, exception_type=None) -> None:
        try:
            if not exception_type:
                for hook in self._hooks:
                    hook.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None
                if not self._graph_was_finalized:
                    self._graph._unsafe_unfinalize()

    def _is_closed(self) -> bool:
        return self._sess is None

    def _tf_sess(self):
        return self._coordinated_creator.tf_sess


class MonitoredSession(_MonitoredSession):
    """A session that calls hooks, handles initialization and recovery.

    ``session_creator`` makes the underlying session (ChiefSessionCreator by default);
    AbortedError and UnavailableError make it create a new one and run the step again.
    """

    def __init__(self, session_creator: Optional[SessionCreator] = None,
                 hooks: Optional[Sequence[hooks_lib.SessionRunHook]] = None,
                 stop_grace_period_secs: float = 120):
        super().__init__(session_creator, hooks, should_recover=True,
                         stop_grace_period_secs=stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A MonitoredSession for a single process (a chief, no recovery), with ``raw_session()``."""

    def __init__(self, hooks: Optional[Sequence[hooks_lib.SessionRunHook]] = None,
                 scaffold: Optional[Scaffold] = None, master: str = "", config=None,
                 checkpoint_dir: Optional[str] = None, stop_grace_period_secs: float = 120,
                 checkpoint_filename_with_path: Optional[str] = None):
        session_creator = ChiefSessionCreator(
            scaffold=scaffold, master=master, config=config, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(session_creator, hooks, should_recover=False,
                         stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self):
        """The underlying tf.Session (its runs do not call hooks)."""
        return self._tf_sess()


def MonitoredTrainingSession(master: str = "", is_chief: bool = True,  # noqa: N802 - TF's name
                             checkpoint_dir: Optional[str] = None,
                             scaffold: Optional[Scaffold] = None,
                             hooks: Optional[Sequence[hooks_lib.SessionRunHook]] = None,
                             chief_only_hooks: Optional[Sequence[hooks_lib.SessionRunHook]] = None,
                             save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs: float = 120,
                             log_step_count_steps: Optional[int] = 100,
                             max_wait_secs: float = 7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir: Optional[str] = None) -> MonitoredSession:
    """A MonitoredSession for training, set up as TensorFlow 1.x does.

    The chief (``is_chief``) restores from ``checkpoint_dir`` or initializes, and also runs
    ``chief_only_hooks``, a StepCounterHook (every ``log_step_count_steps``), a
    SummarySaverHook (every ``save_summaries_steps`` steps, default 100, or
    ``save_summaries_secs``) writing to ``summary_dir`` (default ``checkpoint_dir``) and a
    CheckpointSaverHook (every ``save_checkpoint_secs``, default 600, or
    ``save_checkpoint_steps``). Other workers wait at most ``max_wait_secs`` for the chief
    to initialize the model.
    """
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None

    scaffold = scaffold or Scaffold()
    if not is_chief:
        session_creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                               max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=session_creator, hooks=hooks or [],
                                stop_grace_period_secs=stop_grace_period_secs)

    all_hooks: List[hooks_lib.SessionRunHook] = list(chief_only_hooks or [])
    session_creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir,
                                          master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(hooks_lib.StepCounterHook(output_dir=summary_dir,
                                                       every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or \
                (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(hooks_lib.SummarySaverHook(
                scaffold=scaffold, save_steps=save_summaries_steps,
                save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir:
        if (save_checkpoint_secs and save_checkpoint_secs > 0) or \
                (save_checkpoint_steps and save_checkpoint_steps > 0):
            all_hooks.append(hooks_lib.CheckpointSaverHook(
                checkpoint_dir, save_steps=save_checkpoint_steps, save_secs=save_checkpoint_secs,
                scaffold=scaffold))
    all_hooks.extend(hooks or [])
    return MonitoredSession(session_creator=session_creator, hooks=all_hooks,
                            stop_grace_period_secs=stop_grace_period_secs)
