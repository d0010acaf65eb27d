"""``tf.train.SessionManager``: sessions whose model is ready to use.

The chief calls ``prepare_session``: restore the latest checkpoint of ``checkpoint_dir`` if
there is one, else run ``init_op``/``init_fn``; then run ``local_init_op`` and check
``ready_op``. Other workers call ``wait_for_session``: create sessions and poll until the
chief has initialized the (shared) model, for at most ``max_wait_secs``.

``ready_op`` is a 1-D string tensor naming what is not ready (``report_uninitialized_variables``);
the model is ready when it is empty. ``ready_for_local_init_op`` likewise gates
``local_init_op`` (typically: the global variables must be initialized first).
"""
from __future__ import annotations

import logging
import time
from typing import Callable, List, Optional, Tuple

import numpy as np

from ..framework import errors
from ..framework.ops import Graph, get_default_graph
from ..runtime import waits
from . import checkpoint_management

__all__ = ["SessionManager"]

_log = logging.getLogger("tfjupyter")


def _default_session_factory(master: str, graph: Graph, config):
    # Looked up at call time: sessions for gRPC targets come from the same constructor.
    from ..client import session as session_module
    return session_module.Session(master, graph=graph, config=config)


def _maybe_name(obj) -> str:
    if obj is None:
        return "None"
    if hasattr(obj, "name"):
        return obj.name
    return f"<no name for {obj}>"


class SessionManager:
    """Creates sessions and makes their model ready: restored, initialized, or waited for.

    ``session_factory(master, graph, config)`` (a tfjupyter extension) replaces
    ``tf.Session(master, graph=graph, config=config)`` as the way sessions are made.
    """

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None,
                 graph: Optional[Graph] = None, recovery_wait_secs: float = 30,
                 local_init_run_options=None, local_init_feed_dict=None,
                 session_factory: Optional[Callable] = None):
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a "
                             f"local_init_op , ready_for_local_init_op [{ready_for_local_init_op}]")
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._local_init_run_options = local_init_run_options
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._session_factory = session_factory or _default_session_factory
        self._target: Optional[str] = None

    # -- sessions ----------------------------------------------------------------------------------
    def _new_session(self, master: str, config):
        self._target = master
        return self._session_factory(master, self._graph, config)

    @staticmethod
    def _safe_close(sess) -> None:
        try:
            sess.close()
        except Exception:  # closing a failed session is best effort
            pass

    def _restore_checkpoint(self, master: str, saver=None, checkpoint_dir: Optional[str] = None,
                            checkpoint_filename_with_path: Optional[str] = None,
                            wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                            config=None):
        """A new session, and whether a checkpoint was restored into it."""
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and "
                             "checkpoint_filename_with_path.")
        sess = self._new_session(master, config)
        try:
            if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
                return sess, False
            if checkpoint_filename_with_path:
                saver.restore(sess, checkpoint_filename_with_path)
                return sess, True
            # Wait (at most max_wait_secs) for a checkpoint to appear, if asked to.
            deadline = time.monotonic() + max_wait_secs
            ckpt = checkpoint_management.get_checkpoint_state(checkpoint_dir)
            while not ckpt or not ckpt.model_checkpoint_path:
                remaining = deadline - time.monotonic()
                if not wait_for_checkpoint or remaining <= 0:
                    return sess, False
                _log.info("Waiting for checkpoint to be available.")
                time.sleep(min(self._recovery_wait_secs, remaining))
                ckpt = checkpoint_management.get_checkpoint_state(checkpoint_dir)
            saver.restore(sess, ckpt.model_checkpoint_path)
            saver.recover_last_checkpoints(ckpt.all_model_checkpoint_paths)
            return sess, True
        except BaseException:
            self._safe_close(sess)
            raise

    def prepare_session(self, master: str, init_op=None, saver=None,
                        checkpoint_dir: Optional[str] = None,
                        checkpoint_filename_with_path: Optional[str] = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config=None, init_feed_dict=None,
                        init_fn: Optional[Callable] = None):
        """A session with the model restored from the latest checkpoint of ``checkpoint_dir``
        (or ``checkpoint_filename_with_path``) if there is one, else initialized by
        ``init_op`` and/or ``init_fn(sess)``; ``local_init_op`` run; ``ready_op`` checked.

        Raises RuntimeError if the model is still not ready after that.
        """
        sess, is_loaded_from_checkpoint = self._restore_checkpoint(
            master, saver, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config)
        try:
            if not is_loaded_from_checkpoint:
                if init_op is None and not init_fn and self._local_init_op is None:
                    raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                       "local_init_op was given")
                if init_op is not None:
                    sess.run(init_op, feed_dict=init_feed_dict)
                if init_fn:
                    init_fn(sess)
            local_init_success, msg, _ = self._try_run_local_init_op(sess)
            if not local_init_success:
                raise RuntimeError("Init operations did not make model ready for local_init.  "
                                   f"Init op: {_maybe_name(init_op)}, init fn: {init_fn}, "
                                   f"error: {msg}")
            is_ready, msg, _ = self._model_ready(sess)
            if not is_ready:
                raise RuntimeError("Init operations did not make model ready.  Init op: "
                                   f"{_maybe_name(init_op)}, init fn: {init_fn}, local_init_op: "
                                   f"{_maybe_name(self._local_init_op)}, error: {msg}")
        except BaseException:
            self._safe_close(sess)
            raise
        return sess

    def recover_session(self, master: str, saver=None, checkpoint_dir: Optional[str] = None,
                        checkpoint_filename_with_path: Optional[str] = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config=None):
        """(session, True) if a checkpoint was restored and made the model ready; else
        (session, False): the caller must initialize the model itself."""
        sess, is_loaded_from_checkpoint = self._restore_checkpoint(
            master, saver, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config)
        try:
            local_init_success, msg, _ = self._try_run_local_init_op(sess)
            if not is_loaded_from_checkpoint:
                return sess, False
            restoring_file = checkpoint_dir or checkpoint_filename_with_path
            if not local_init_success:
                _log.info("Restoring model from %s did not make model ready for local init: %s",
                          restoring_file, msg)
                return sess, False
            is_ready, msg, _ = self._model_ready(sess)
            if not is_ready:
                _log.info("Restoring model from %s did not make model ready: %s",
                          restoring_file, msg)
                return sess, False
            _log.info("Restored model from %s", restoring_file)
            return sess, True
        except BaseException:
            self._safe_close(sess)
            raise

    def wait_for_session(self, master: str, config=None,
                         max_wait_secs: Optional[float] = float("inf")):
        """A session whose model is ready (initialized by someone else, e.g. the chief).

        Creates a session, runs ``local_init_op`` once the model is ready for it and checks
        ``ready_op``; if not ready, closes it and tries again, after pauses growing from 0.1 s to
        ``recovery_wait_secs``.
        After ``max_wait_secs`` raises DeadlineExceededError naming what is still not ready.
        """
        if max_wait_secs is None:
            max_wait_secs = float("inf")
        deadline = time.monotonic() + max_wait_secs
        pause = 0.0
        # What %tf_cluster why reports while this loop waits (runtime/waits.py).
        waiting = {"uninitialized": [], "message": None, "master": master}
        blocked = waits.Blocked("readiness", None, "model", lambda: dict(waiting))
        with waits.blocking(blocked):
            while True:
                sess = self._new_session(master, config)
                try:
                    local_init_success, not_ready_local_msg, names = \
                        self._try_run_local_init_op(sess)
                    not_ready_msg = None
                    if local_init_success:
                        is_ready, not_ready_msg, names = self._model_ready(sess)
                        if is_ready:
                            return sess
                except BaseException:
                    self._safe_close(sess)
                    raise
                self._safe_close(sess)
                waiting.update(uninitialized=list(names or ()),
                               message=not_ready_msg or not_ready_local_msg)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if names:
                        detail = "still uninitialized: " + ", ".join(names)
                    else:
                        detail = not_ready_msg or not_ready_local_msg
                    raise errors.DeadlineExceededError(
                        None, None,
                        f"Session was not ready after waiting {max_wait_secs:g} secs: {detail}")
                _log.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s, "
                          "ready: %s", not_ready_local_msg, not_ready_msg)
                # TF sleeps recovery_wait_secs (30 s) at once; polling sooner at first, backing
                # off up to it, lets a worker start seconds after its chief instead of half a
                # minute.
                pause = min(self._recovery_wait_secs, remaining, pause * 2 if pause else 0.1)
                time.sleep(pause)

    # -- readiness ---------------------------------------------------------------------------------
    def _model_ready(self, sess) -> Tuple[bool, Optional[str], List[str]]:
        return _ready(self._ready_op, sess, "Model not ready")

    def _model_ready_for_local_init(self, sess) -> Tuple[bool, Optional[str], List[str]]:
        return _ready(self._ready_for_local_init_op, sess, "Model not ready for local init")

    def _try_run_local_init_op(self, sess) -> Tuple[bool, Optional[str], List[str]]:
        """Runs local_init_op once ready_for_local_init_op says the model is ready for it."""
        if self._local_init_op is None:
            return True, None, []
        is_ready, msg, names = self._model_ready_for_local_init(sess)
        if not is_ready:
            return False, msg, names
        _log.info("Running local_init_op.")
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict,
                 options=self._local_init_run_options)
        _log.info("Done running local_init_op.")
        return True, None, []


def _ready(op, sess, msg: str) -> Tuple[bool, Optional[str], List[str]]:
    """(ready, why not, the names reported): ready when ``op`` returns an empty 1-D tensor."""
    if op is None:
        return True, None, []
    try:
        ready_value = sess.run(op)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            _log.warning("%s : error [%s]", msg, e)
            raise
        return False, str(e), []
    # None or int32 values are accepted too, for ready ops of older programs.
    if ready_value is None or getattr(ready_value, "dtype", None) == np.int32 or \
            np.size(ready_value) == 0:
        return True, None, []
    names = [n.decode("utf-8") if isinstance(n, bytes) else str(n)
             for n in np.ravel(ready_value)]
    return False, "Variables not initialized: " + ", ".join(names), names
