"""``tf.estimator.train_and_evaluate`` (TF 1.15) with ``TrainSpec`` and ``EvalSpec``.

Locally (no cluster in ``TF_CONFIG``) it trains and evaluates after each new checkpoint (at most
every ``throttle_secs``) and once at the end. In a cluster each task does its role, as in TF:
``chief`` and ``worker`` tasks train between-graph on their server (workers start
``5 * (index + 1)`` s late, at most 60 s or ``experimental_max_worker_delay_secs``), ``ps``
tasks serve (``server.join()``), the ``evaluator`` evaluates each new checkpoint in
``model_dir`` until the global step reaches ``max_steps``. The ``EvalSpec``'s exporters export
after each evaluation, where it happens (locally, or on the evaluator).
"""
from __future__ import annotations

import collections
import enum
import logging
import os
import time

from ..framework.ops import GraphKeys
from ..train.basic_session_run_hooks import (CheckpointSaverListener, SecondOrStepTimer,
                                             SessionRunHook)
from . import task_server
from .estimator import Estimator
from .exporter import validate_exporters
from .run_config import TaskType

__all__ = ["TrainSpec", "EvalSpec", "train_and_evaluate"]

_log = logging.getLogger("tfjupyter")
_DELAY_SECS_PER_WORKER = 5
_MAX_DELAY_SECS = 60


def _validate_input_fn(input_fn) -> None:
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn}")


def _validate_hooks(hooks) -> tuple:
    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be `SessionRunHook` instances, given: {hook}")
    return hooks


class TrainSpec(collections.namedtuple("TrainSpec",
                                       ["input_fn", "max_steps", "hooks", "saving_listeners"])):
    """What ``train_and_evaluate`` trains on, and for how long."""

    def __new__(cls, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        _validate_input_fn(input_fn)
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        listeners = tuple(saving_listeners or [])
        for listener in listeners:
            if not isinstance(listener, CheckpointSaverListener):
                raise TypeError("All saving_listeners must be `CheckpointSaverListener` "
                                f"instances, given: {listener}")
        return super().__new__(cls, input_fn, max_steps, _validate_hooks(hooks), listeners)


class EvalSpec(collections.namedtuple("EvalSpec", ["input_fn", "steps", "name", "hooks",
                                                   "exporters", "start_delay_secs",
                                                   "throttle_secs"])):
    """What ``train_and_evaluate`` evaluates on, how many batches, and how often."""

    def __new__(cls, input_fn, steps=100, name=None, hooks=None, exporters=None,
                start_delay_secs=120, throttle_secs=600):
        _validate_input_fn(input_fn)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name}")
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        return super().__new__(cls, input_fn, steps, name, _validate_hooks(hooks),
                               validate_exporters(exporters), start_delay_secs, throttle_secs)


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains and evaluates ``estimator`` locally, or does this task's part of a distributed
    run (``TF_CONFIG``). Locally returns ``(metrics of the last evaluation, [])``."""
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError("`eval_spec` must have type `tf.estimator.EvalSpec`. Got: "
                        f"{type(eval_spec)}")
    executor = _TrainingExecutor(estimator, train_spec, eval_spec)
    config = estimator.config
    if config.task_type == TaskType.EVALUATOR and config.task_id > 0:
        raise ValueError("For distributed training, there can only be one `evaluator` task "
                         f"(with task id 0).  Given task id {config.task_id}")
    return executor.run()


class _EvalStatus(enum.Enum):
    EVALUATED = "evaluated"
    MISSING_CHECKPOINT = "missing checkpoint"
    NO_NEW_CHECKPOINT = "no new checkpoint"


_EvalResult = collections.namedtuple("_EvalResult", ["status", "metrics", "checkpoint_path",
                                                   "export_results"], defaults=[[]])


class _Evaluator:
    """Evaluates the latest checkpoint, once per checkpoint."""

    def __init__(self, estimator: Estimator, eval_spec: EvalSpec, max_training_steps):
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._max_training_steps = max_training_steps
        self._previous_ckpt_path = None
        self.is_final_export_triggered = False

    def evaluate(self) -> _EvalResult:
        latest = self._estimator.latest_checkpoint()
        if not latest:
            _log.warning("Estimator is not trained yet. Will start an evaluation when a "
                         "checkpoint is ready.")
            return _EvalResult(_EvalStatus.MISSING_CHECKPOINT, None, None)
        if latest == self._previous_ckpt_path:
            _log.warning("No new checkpoint ready for evaluation. Skip the current evaluation "
                         "pass as evaluation results are expected to be same for the same "
                         "checkpoint.")
            return _EvalResult(_EvalStatus.NO_NEW_CHECKPOINT, None, None)
        metrics = self._estimator.evaluate(self._eval_spec.input_fn, steps=self._eval_spec.steps,
                                           name=self._eval_spec.name, checkpoint_path=latest,
                                           hooks=self._eval_spec.hooks)
        if GraphKeys.GLOBAL_STEP not in metrics:
            raise ValueError("Internal error: `Estimator.evaluate` result should have "
                             "`global_step` in result. Given {}".format(metrics))
        is_final = bool(self._max_training_steps) and \
            metrics[GraphKeys.GLOBAL_STEP] >= self._max_training_steps
        export_base = os.path.join(self._estimator.model_dir, "export")
        exports = [exporter.export(self._estimator, os.path.join(export_base, exporter.name),
                                   latest, metrics, is_final)
                   for exporter in self._eval_spec.exporters]
        self.is_final_export_triggered = is_final
        self._previous_ckpt_path = latest
        return _EvalResult(_EvalStatus.EVALUATED, metrics, latest, exports)


class _NewCheckpointListenerForEvaluate(CheckpointSaverListener):
    """Evaluates after a checkpoint is saved (at most every ``throttle_secs``; not the one
    saved when the session starts), and at the end unless the last step was evaluated."""

    def __init__(self, evaluator: _Evaluator, throttle_secs):
        self._evaluator = evaluator
        self._timer = SecondOrStepTimer(every_secs=throttle_secs)
        self.eval_result = None

    def begin(self) -> None:
        self._timer.reset()
        self._is_first_run = True

    def after_save(self, session, global_step_value) -> bool:
        if self._is_first_run:
            self._is_first_run = False
            return False
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
            if self._evaluator.is_final_export_triggered:
                _log.info("Stopping training since the final evaluation is done.")
                return True
        return False

    def end(self, session, global_step_value) -> None:
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value) -> None:
        self._timer.update_last_triggered_step(global_step_value)
        self.eval_result = self._evaluator.evaluate()
        if self.eval_result.status != _EvalStatus.EVALUATED:
            raise RuntimeError("There was no new checkpoint after the training. Eval status: "
                               f"{self.eval_result.status.value}")


class _TrainingExecutor:
    """Runs this task's role: ``run_local``, or ``run_<task type>``."""

    def __init__(self, estimator, train_spec, eval_spec):
        if not isinstance(estimator, Estimator):
            raise TypeError("`estimator` must have type `tf.estimator.Estimator`. Got: "
                            f"{type(estimator)}")
        if not isinstance(train_spec, TrainSpec):
            raise TypeError("`train_spec` must have type `tf.estimator.TrainSpec`. Got: "
                            f"{type(train_spec)}")
        self._estimator = estimator
        self._train_spec = train_spec
        self._eval_spec = eval_spec

    def run(self):
        config = self._estimator.config
        if not config.cluster_spec and config.task_type != TaskType.EVALUATOR:
            _log.info("Running training and evaluation locally (non-distributed).")
            return self.run_local()
        if not config.task_type:
            raise ValueError("`estimator.config` must have task_type set. This usually means "
                             "TF_CONFIG environment is not set correctly.")
        if config.task_type == "local":
            raise ValueError("`task.type` in TF_CONFIG cannot be `local`. Leaving `cluster` and "
                             "`task` properties in TF_CONFIG absent triggers train and evaluate "
                             "`Estimator` locally (non-distributed).")
        roles = {"chief": self.run_chief, "worker": self.run_worker, "master": self.run_master,
                 "ps": self.run_ps, "evaluator": self.run_evaluator}
        if config.task_type not in roles:
            raise ValueError(f"Task type {config.task_type} is not supported. Supported task "
                             f"types are {list(roles)}")
        return roles[config.task_type]()

    def run_local(self):
        config = self._estimator.config
        _log.info("Start train and evaluate loop. The evaluate will happen after every "
                  "checkpoint. Checkpoint frequency is determined based on RunConfig "
                  f"arguments: save_checkpoints_steps {config.save_checkpoints_steps} or "
                  f"save_checkpoints_secs {config.save_checkpoints_secs}.")
        evaluator = _Evaluator(self._estimator, self._eval_spec, self._train_spec.max_steps)
        listener = _NewCheckpointListenerForEvaluate(evaluator, self._eval_spec.throttle_secs)
        self._estimator.train(self._train_spec.input_fn, max_steps=self._train_spec.max_steps,
                              hooks=list(self._train_spec.hooks),
                              saving_listeners=list(self._train_spec.saving_listeners)
                              + [listener])
        result = listener.eval_result or _EvalResult(_EvalStatus.MISSING_CHECKPOINT, None, None)
        return result.metrics, result.export_results

    def run_chief(self):
        return self._start_distributed_training()

    def run_worker(self):
        return self._start_distributed_training()

    def run_master(self):
        """The legacy chief, which also evaluates after training."""
        self._start_distributed_training()
        result = _Evaluator(self._estimator, self._eval_spec,
                            self._train_spec.max_steps).evaluate()
        return result.metrics, result.export_results

    def run_ps(self):
        task_server.start_std_server(self._estimator.config).join()

    def run_evaluator(self):
        """Evaluates each new checkpoint until one reaches the training's max_steps."""
        if self._eval_spec.start_delay_secs:
            _log.info("Waiting %f secs before starting eval.", self._eval_spec.start_delay_secs)
            time.sleep(self._eval_spec.start_delay_secs)
        evaluator = _Evaluator(self._estimator, self._eval_spec, self._train_spec.max_steps)
        max_steps = self._train_spec.max_steps
        while True:
            start = time.time()
            result = evaluator.evaluate()
            if result.status == _EvalStatus.EVALUATED and max_steps and \
                    result.metrics.get(GraphKeys.GLOBAL_STEP, 0) >= max_steps:
                _log.info("Exiting evaluation, global_step=%s >= train max_steps=%s",
                          result.metrics[GraphKeys.GLOBAL_STEP], max_steps)
                return result.metrics, result.export_results
            wait = self._eval_spec.throttle_secs - (time.time() - start)
            if wait > 0:
                _log.info("Waiting %f secs before starting next eval run.", wait)
                time.sleep(wait)
            elif self._eval_spec.throttle_secs == 0 and result.status != _EvalStatus.EVALUATED:
                _log.warning("EvalSpec.throttle_secs is set as 0. This might overload the job "
                             "before finding (next) new checkpoint. Please consider to increase "
                             "it.")
                time.sleep(0.5)   # not a busy loop while the chief writes the next one

    def _start_distributed_training(self):
        config = self._estimator.config
        # The server starts before the delay, so that the other tasks can reach it.
        task_server.start_std_server(config)
        delay = 0
        if config.task_type == TaskType.WORKER:
            max_delay = _MAX_DELAY_SECS if config.experimental_max_worker_delay_secs is None \
                else int(config.experimental_max_worker_delay_secs)
            delay = min(max_delay, (config.task_id + 1) * _DELAY_SECS_PER_WORKER)
        if delay > 0:
            _log.info("Waiting %d secs before starting training.", delay)
            time.sleep(delay)
        self._estimator.train(self._train_spec.input_fn, max_steps=self._train_spec.max_steps,
                              hooks=list(self._train_spec.hooks),
                              saving_listeners=list(self._train_spec.saving_listeners) or None)
        return None, []
