"""``ExperimentHook``: records a ``tf.train.MonitoredTrainingSession`` as an experiment.

    hooks = [tf.train.StopAtStepHook(last_step=2000), ExperimentHook("mlp", config={"lr": 0.1})]
    with tf.train.MonitoredTrainingSession(checkpoint_dir="ckpt", hooks=hooks) as sess: ...

The experiment starts when the session is made (``begin``) and ends with it (``end``); if the
training raises, MonitoredSession never calls ``end``, so the hook's record is ended as
``failed`` by ``ExperimentHook.close()`` or, at the latest, as ``interrupted`` when the process
exits. Inside an experiment already running (``%tf_experiment start``, ``with Experiment``)
and without a name, the hook adds its session to that one and leaves ending it to its owner.
"""
from __future__ import annotations

from typing import Optional

from ..train.basic_session_run_hooks import SessionRunHook
from .recorder import Experiment, current

__all__ = ["ExperimentHook"]


class ExperimentHook(SessionRunHook):
    """``name``: the experiment to start (None: join the running one, else "training");
    ``experiment``: an Experiment to record into; other keyword arguments (dir, cluster,
    config, checkpoint_dir) go to ``Experiment``. ``record`` is the loaded record once the
    hook ended the experiment."""

    def __init__(self, name: Optional[str] = None, experiment: Optional[Experiment] = None,
                 **experiment_kwargs):
        if name is not None and experiment is not None:
            raise ValueError("ExperimentHook: give a name or an experiment, not both")
        if name is not None:
            Experiment(name, **experiment_kwargs)   # checks the arguments now, not at begin()
        self.name = name
        self.experiment = experiment
        self._kwargs = experiment_kwargs
        self._owned = False
        self.record = None

    def begin(self) -> None:
        if self.experiment is not None and self.experiment.status != "new":
            if self.experiment.running:
                return
            self.experiment = None   # the previous session's record ended: start a new one
        running = current() if self.name is None and self.experiment is None else None
        if running is not None:
            self.experiment = running
            return
        if self.experiment is None:
            self.experiment = Experiment(self.name or "training", **self._kwargs)
        self.experiment.start()
        self._owned = True

    def after_create_session(self, session, coord) -> None:
        if self.experiment is not None and self.experiment.running:
            self.experiment.track_session(session)   # known before its first step record

    def end(self, session) -> None:
        self._end("finished", None)

    def close(self, error: Optional[BaseException] = None) -> None:
        """Ends a record the hook started that is still running (``failed`` with ``error``)."""
        if error is None:
            self._end("finished", None)
        else:
            self._end("failed", f"{type(error).__name__}: {error}")

    def _end(self, status: str, error: Optional[str]) -> None:
        if self._owned and self.experiment is not None and self.experiment.running:
            self.record = self.experiment.end(status, error)
        self._owned = False
