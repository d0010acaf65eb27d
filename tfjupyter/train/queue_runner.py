"""Queue runners: threads that run a queue's enqueue ops until it is closed or a stop is
requested (``tf.train.QueueRunner``, ``tf.train.start_queue_runners``)."""
from __future__ import annotations

import logging
import threading
import weakref
from typing import List, Optional, Sequence

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ..framework import errors
from ..framework.ops import (GraphKeys, Operation, get_default_graph, prepend_name_scope,
                             register_proto_function, strip_name_scope)

__all__ = ["QueueRunner", "QueueRunnerDef", "add_queue_runner", "start_queue_runners"]

_log = logging.getLogger("tfjupyter")


def _queue_runner_def_class():
    """TensorFlow's QueueRunnerDef (tensorflow/core/protobuf/queue_runner.proto), which
    TensorBoard's compiled protos lack: the same fields and numbers, so the bytes are
    TensorFlow's. The exception types are TensorFlow's error.Code enum there; an int32 here has
    the same wire form. Built in a pool of its own, so it cannot clash with other copies."""
    proto = descriptor_pb2.FileDescriptorProto(name="tfjupyter/train/queue_runner.proto",
                                               package="tfjupyter", syntax="proto3")
    message = proto.message_type.add(name="QueueRunnerDef")
    field = descriptor_pb2.FieldDescriptorProto
    for number, name, label, kind in (
            (1, "queue_name", field.LABEL_OPTIONAL, field.TYPE_STRING),
            (2, "enqueue_op_name", field.LABEL_REPEATED, field.TYPE_STRING),
            (3, "close_op_name", field.LABEL_OPTIONAL, field.TYPE_STRING),
            (4, "cancel_op_name", field.LABEL_OPTIONAL, field.TYPE_STRING),
            (5, "queue_closed_exception_types", field.LABEL_REPEATED, field.TYPE_INT32)):
        message.field.add(name=name, number=number, label=label, type=kind)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tfjupyter.QueueRunnerDef"))


QueueRunnerDef = _queue_runner_def_class()
_ERROR_CLASSES = {cls.error_code: cls for cls in (getattr(errors, name) for name in errors.__all__)
                  if cls is not errors.OpError}


def _op_name(element) -> str:
    """The op name of an Operation or Tensor (a queue runner's ops may be given as either)."""
    return element.name if isinstance(element, Operation) else element.op.name


class QueueRunner:
    """Holds a queue and the ops that fill it; ``create_threads`` starts one thread per
    enqueue op, each running its op in a loop until the queue is closed (the op raises one of
    ``queue_closed_exception_types``, OutOfRangeError by default) or the coordinator stops.
    The last thread to finish runs ``close_op``; a stop request runs ``cancel_op``."""

    def __init__(self, queue=None, enqueue_ops: Optional[Sequence] = None, close_op=None,
                 cancel_op=None, queue_closed_exception_types=None, queue_runner_def=None,
                 import_scope=None):
        if queue_runner_def is not None:
            if queue is not None or enqueue_ops is not None:
                raise ValueError("queue_runner_def and queue are mutually exclusive.")
            self._init_from_proto(queue_runner_def, import_scope)
            return
        if queue is None or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        if queue_closed_exception_types is not None:
            if (not isinstance(queue_closed_exception_types, tuple)
                    or not queue_closed_exception_types
                    or not all(isinstance(t, type) and issubclass(t, errors.OpError)
                               for t in queue_closed_exception_types)):
                raise TypeError("queue_closed_exception_types, when provided, must be a tuple "
                                f"of tf.error types, but saw: {queue_closed_exception_types}")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        # Close when nothing more will be produced, keeping pending enqueues; cancel (on error
        # or stop) also cancels them, so that every blocked thread wakes up.
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else \
            queue.close(cancel_pending_enqueues=True)
        self._queue_closed_exception_types = (queue_closed_exception_types
                                              or (errors.OutOfRangeError,))
        self._init_threading()

    def _init_threading(self) -> None:
        self._lock = threading.Lock()
        self._runs_per_session = weakref.WeakKeyDictionary()
        self._exceptions_raised: List[BaseException] = []

    def _init_from_proto(self, queue_runner_def, import_scope: Optional[str]) -> None:
        """The runner of a QueueRunnerDef whose ops are in the default graph (an imported meta
        graph). Its ``queue`` is then the queue's op, as in TensorFlow."""
        graph = get_default_graph()

        def op(name: str) -> Operation:
            return graph.as_graph_element(prepend_name_scope(name, import_scope),
                                          allow_tensor=False)

        self._queue = op(queue_runner_def.queue_name)
        self._enqueue_ops = [op(name) for name in queue_runner_def.enqueue_op_name]
        self._close_op = op(queue_runner_def.close_op_name)
        self._cancel_op = op(queue_runner_def.cancel_op_name)
        unknown = [c for c in queue_runner_def.queue_closed_exception_types
                   if c not in _ERROR_CLASSES]
        if unknown:
            raise ValueError(f"QueueRunnerDef for {queue_runner_def.queue_name!r} has unknown "
                             f"error codes {unknown} in queue_closed_exception_types")
        self._queue_closed_exception_types = tuple(
            _ERROR_CLASSES[c] for c in queue_runner_def.queue_closed_exception_types
        ) or (errors.OutOfRangeError,)
        self._init_threading()

    def to_proto(self, export_scope: Optional[str] = None):
        """The QueueRunnerDef of this runner (op names without ``export_scope/``), or None when
        its queue is outside ``export_scope``."""
        queue_name = _op_name(self._queue.queue_ref) if hasattr(self._queue, "queue_ref") \
            else _op_name(self._queue)
        if export_scope and not queue_name.startswith(export_scope.rstrip("/") + "/"):
            return None
        return QueueRunnerDef(
            queue_name=strip_name_scope(queue_name, export_scope),
            enqueue_op_name=[strip_name_scope(_op_name(x), export_scope)
                             for x in self._enqueue_ops],
            close_op_name=strip_name_scope(_op_name(self._close_op), export_scope),
            cancel_op_name=strip_name_scope(_op_name(self._cancel_op), export_scope),
            queue_closed_exception_types=[t.error_code
                                          for t in self._queue_closed_exception_types])

    @staticmethod
    def from_proto(queue_runner_def, import_scope: Optional[str] = None) -> "QueueRunner":
        return QueueRunner(queue_runner_def=queue_runner_def, import_scope=import_scope)

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: self._enqueue_ops)
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._queue_closed_exception_types)

    @property
    def exceptions_raised(self) -> List[BaseException]:
        """Exceptions the threads raised when they ran without a coordinator."""
        return self._exceptions_raised

    @property
    def name(self) -> str:
        return self._queue.name

    def _run(self, sess, enqueue_op, coord=None) -> None:
        decremented = False
        try:
            run = getattr(sess, "make_callable", None)
            enqueue = run(enqueue_op) if run is not None else (lambda: sess.run(enqueue_op))
            while True:
                if coord and coord.should_stop():
                    break
                try:
                    enqueue()
                except self._queue_closed_exception_types:
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except Exception as e:  # closing is best effort
                                _log.debug("Ignored exception: %s", e)
                        return
        except Exception as e:
            if coord:
                coord.request_stop(e)
            else:
                _log.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, cancel_op, coord) -> None:
        coord.wait_for_stop()
        try:
            sess.run(cancel_op)
        except Exception as e:  # cancelling is best effort
            _log.debug("Ignored exception: %s", e)

    def create_threads(self, sess, coord=None, daemon: bool = False,
                       start: bool = False) -> List[threading.Thread]:
        """Threads running the enqueue ops in ``sess`` (plus one that cancels the queue when
        ``coord`` stops); registered with ``coord``. None new if already running in sess."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord),
                                    name=f"QueueRunnerThread-{self.name}-{op.name}")
                   for op in self._enqueue_ops]
        if coord:
            threads.append(threading.Thread(target=self._close_on_stop,
                                            args=(sess, self._cancel_op, coord),
                                            name=f"QueueRunnerThread-{self.name}-close_on_stop"))
        for t in threads:
            if coord:
                coord.register_thread(t)
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """Adds a QueueRunner to a collection of the default graph (for start_queue_runners)."""
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon: bool = True, start: bool = True,
                        collection: str = GraphKeys.QUEUE_RUNNERS) -> List[threading.Thread]:
    """Starts the threads of every QueueRunner in the session graph's collection; returns
    them (an empty list when the graph has no queue runners)."""
    if sess is None:
        from ..client.session import get_default_session
        sess = get_default_session()
        if sess is None:
            raise ValueError("Cannot start queue runners: No default session is registered. "
                             "Use `with sess.as_default()` or pass an explicit session to "
                             "tf.start_queue_runners(sess=sess)")
    if not hasattr(sess, "run") or not hasattr(sess, "graph"):
        if type(sess).__name__ in ("MonitoredSession", "SingularMonitoredSession"):
            return []
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {type(sess)}")
    runners = sess.graph.get_collection(collection)
    if not runners:
        _log.warning("`tf.train.start_queue_runners()` was called when no queue runners were "
                  "defined. You can safely remove the call to this deprecated function.")
    threads: List[threading.Thread] = []
    with sess.graph.as_default():
        for qr in runners:
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


# In a MetaGraphDef the queue_runners collection holds QueueRunnerDefs, as in TensorFlow.
register_proto_function(
    GraphKeys.QUEUE_RUNNERS, proto_type=QueueRunnerDef,
    to_proto=lambda runner, export_scope: runner.to_proto(export_scope),
    from_proto=QueueRunner.from_proto,
    name_fields=("queue_name", "enqueue_op_name", "close_op_name", "cancel_op_name"))
