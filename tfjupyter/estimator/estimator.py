"""``tf.estimator.Estimator`` (TF 1.15): a model given as a ``model_fn``, trained, evaluated,
used for prediction and exported, each in a graph of its own built from an ``input_fn``, with
the state kept as checkpoints in ``model_dir``::

    def model_fn(features, labels, mode, params):   # -> tf.estimator.EstimatorSpec
        ...
    estimator = tf.estimator.Estimator(model_fn, model_dir="run1", params={"lr": 0.1})
    estimator.train(input_fn, max_steps=1000)       # resumes from run1's latest checkpoint
    estimator.evaluate(eval_input_fn)               # {"accuracy": ..., "loss": ..., "global_step": ...}

Training is a ``MonitoredTrainingSession``: the chief restores or initializes, saves
checkpoints (``RunConfig.save_checkpoints_steps/secs``) and summaries; every task logs
"loss = ..., step = ..." and "global_step/sec" through ``tf.logging``. With ``TF_CONFIG``
describing a cluster, variables go to the ps tasks (``replica_device_setter``) and the session
opens on this task's server (``task_server.py``).
"""
from __future__ import annotations

import copy
import logging
import os
import re
import shutil
import tempfile
import time

import numpy as np

from ..client.config import ConfigProto
from ..framework import dtypes, errors
from ..framework.ops import (Graph, GraphKeys, Tensor, add_to_collection, device,
                             get_collection)
from ..ops import array_ops, control_flow_ops
from ..ops.random_ops import set_random_seed
from ..saved_model import tag_constants
from ..saved_model.builder import SavedModelBuilder
from ..summary import summary_ops
from ..train import checkpoint_management, training_util
from ..train.basic_session_run_hooks import (CheckpointSaverHook, LoggingTensorHook,
                                             NanTensorHook, SessionRunHook, StopAtStepHook)
from ..train.monitored_session import (ChiefSessionCreator, MonitoredSession,
                                       MonitoredTrainingSession, Scaffold)
from ..train.checkpoint_utils import checkpoint_name as _checkpoint_name
from ..train.saver import Saver
from .. import metrics, variables
from . import evaluation, task_server
from .export.export import build_all_signature_defs
from .mode_keys import ModeKeys
from .model_fn import EstimatorSpec, model_fn_args, verify_model_fn_args
from .run_config import RunConfig
from .util import parse_input_fn_result, uses_dataset_or_queue_runner

__all__ = ["Estimator", "WarmStartSettings", "config_with_model_dir"]

_log = logging.getLogger("tfjupyter")


class WarmStartSettings:
    """Initialize the variables matching ``vars_to_warm_start`` (a regex; default: every
    trainable variable) from ``ckpt_to_initialize_from`` when training starts fresh."""

    def __init__(self, ckpt_to_initialize_from, vars_to_warm_start=".*"):
        self.ckpt_to_initialize_from = os.fspath(ckpt_to_initialize_from)
        self.vars_to_warm_start = vars_to_warm_start


def config_with_model_dir(config, model_dir) -> RunConfig:
    """``config`` (a new RunConfig when None) with its model_dir: ``model_dir``, the config's,
    or a new temporary folder; both given and different is an error (TF's)."""
    if config is None:
        config = RunConfig()
    elif not isinstance(config, RunConfig):
        raise TypeError(f"config must be an instance of `RunConfig`, but provided {config}.")
    if model_dir is not None:
        model_dir = os.fspath(model_dir)
    if model_dir and config.model_dir and model_dir != config.model_dir:
        raise ValueError("`model_dir` are set both in constructor and `RunConfig`, but with "
                         f"different values. In constructor: '{model_dir}', in "
                         f"`RunConfig`: '{config.model_dir}' ")
    model_dir = model_dir or config.model_dir
    if not model_dir:
        model_dir = tempfile.mkdtemp()
        _log.warning("Using temporary folder as model directory: %s", model_dir)
    return config.replace(model_dir=model_dir)


class Estimator:
    """Trains, evaluates, predicts with and exports the model a ``model_fn`` builds."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        self._config = config_with_model_dir(config, model_dir)
        _log.info("Using config: %s", {k.lstrip("_"): v for k, v in vars(self._config).items()})
        self._model_dir = self._config.model_dir
        self._session_config = self._config.session_config or \
            ConfigProto(allow_soft_placement=True)
        self._device_fn = self._config.device_fn or task_server.replica_device_setter(self._config)
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        if warm_start_from is not None and not isinstance(warm_start_from, WarmStartSettings):
            warm_start_from = WarmStartSettings(warm_start_from)
        self._warm_start_settings = warm_start_from

    model_dir = property(lambda self: self._model_dir)
    config = property(lambda self: copy.deepcopy(self._config))
    params = property(lambda self: copy.deepcopy(self._params))
    model_fn = property(lambda self: self._model_fn)

    def get_variable_names(self):
        return [name for name, _ in checkpoint_management.list_variables(self._latest_or_raise())]

    def get_variable_value(self, name):
        return checkpoint_management.load_variable(self._latest_or_raise(), name)

    def latest_checkpoint(self):
        return checkpoint_management.latest_checkpoint(self._model_dir)

    def eval_dir(self, name=None) -> str:
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    # -- train -----------------------------------------------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains for ``steps`` more steps, or until the global step is ``max_steps``, or
        until the input ends."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None and max_steps <= self._global_step_in_checkpoint():
            _log.info("Skipping training since max_steps has already saved.")
            return self
        hooks = _check_hooks_type(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(StopAtStepHook(steps, max_steps))
        loss = self._train_model(input_fn, hooks, list(saving_listeners or []))
        _log.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn, hooks, saving_listeners):
        with Graph().as_default() as g, device(self._device_fn):
            set_random_seed(self._config.tf_random_seed)
            global_step = self._create_and_assert_global_step(g)
            features, labels, input_hooks = self._input(input_fn, ModeKeys.TRAIN)
            examples = _examples_in_batch(features, labels)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self._config)
            return self._train_with_estimator_spec(spec, input_hooks + hooks, global_step,
                                                   saving_listeners, examples)

    def _train_with_estimator_spec(self, spec, worker_hooks, global_step, saving_listeners,
                                   examples=None):
        scaffold = self._maybe_warm_start(spec.scaffold)
        if not any(x.op.name == "loss" for x in get_collection(GraphKeys.SUMMARIES)):
            summary_ops.scalar("loss", spec.loss)
        add_to_collection(GraphKeys.LOSSES, spec.loss)
        worker_hooks = list(worker_hooks)
        worker_hooks.append(NanTensorHook(spec.loss))
        if self._config.log_step_count_steps is not None:
            worker_hooks.append(LoggingTensorHook({"loss": spec.loss, "step": global_step},
                                                  every_n_iter=self._config.log_step_count_steps))
        worker_hooks.extend(spec.training_hooks)
        if not (spec.scaffold.saver or get_collection(GraphKeys.SAVERS)):
            add_to_collection(GraphKeys.SAVERS, Saver(
                sharded=True, max_to_keep=self._config.keep_checkpoint_max,
                keep_checkpoint_every_n_hours=self._config.keep_checkpoint_every_n_hours,
                defer_build=True, save_relative_paths=True))
        chief_hooks = []
        own_saver_hooks = [h for h in worker_hooks + list(spec.training_chief_hooks)
                           if isinstance(h, CheckpointSaverHook)]
        if (self._config.save_checkpoints_secs or self._config.save_checkpoints_steps) and \
                not own_saver_hooks:
            chief_hooks.append(CheckpointSaverHook(
                self._model_dir, save_secs=self._config.save_checkpoints_secs,
                save_steps=self._config.save_checkpoints_steps, scaffold=scaffold,
                listeners=saving_listeners))
        elif saving_listeners:
            raise ValueError("There should be a CheckpointSaverHook to use saving_listeners. "
                             "Please set one of the RunConfig.save_checkpoints_steps or "
                             "RunConfig.save_checkpoints_secs." if not own_saver_hooks else
                             "saving_listeners need the Estimator's own CheckpointSaverHook; "
                             "add them to the CheckpointSaverHook given in the hooks instead.")
        # Step telemetry (dashboards, experiment records) counts the batch's examples.
        fetches = [spec.train_op, spec.loss]
        if examples is not None and training_util.get_examples_per_step() is None:
            training_util.set_examples_per_step(examples)
            fetches.append(examples)
        loss, steps_done = None, False
        with MonitoredTrainingSession(
                master=task_server.session_master(self._config),
                is_chief=self._config.is_chief, checkpoint_dir=self._model_dir,
                scaffold=scaffold, hooks=worker_hooks,
                chief_only_hooks=tuple(chief_hooks) + tuple(spec.training_chief_hooks),
                save_checkpoint_secs=0, save_summaries_steps=self._config.save_summary_steps,
                config=self._session_config,
                max_wait_secs=self._config.session_creation_timeout_secs,
                log_step_count_steps=self._config.log_step_count_steps) as session:
            while not session.should_stop():
                loss = session.run(fetches)[1]
                steps_done = True
        if not steps_done:
            _log.warning("Training with estimator made no steps. Perhaps input is empty or "
                         "misspecified.")
        return loss

    def _maybe_warm_start(self, scaffold) -> Scaffold:
        """The scaffold, warm-starting through an init_fn, which runs only when the session
        initializes (no checkpoint in model_dir yet), as TF's warm start does."""
        settings = self._warm_start_settings
        if settings is None:
            return scaffold
        source = settings.ckpt_to_initialize_from
        if os.path.isdir(source):
            source = checkpoint_management.latest_checkpoint(source)
            if not source:
                raise ValueError("Warm start: no checkpoint in "
                                 f"{settings.ckpt_to_initialize_from}")
        names = {name for name, _ in checkpoint_management.list_variables(source)}
        pattern = re.compile(settings.vars_to_warm_start)
        chosen = [v for v in variables.trainable_variables()
                  if pattern.match(_checkpoint_name(v)) and _checkpoint_name(v) in names]
        _log.info("Warm-starting from: %s (%d variables)", source, len(chosen))
        if not chosen:
            return scaffold
        saver = Saver(var_list=chosen)
        user_init_fn = scaffold.init_fn

        def init_fn(_, session):
            saver.restore(session, source)
            if user_init_fn is not None:
                user_init_fn(session)
        return Scaffold(init_fn=init_fn, copy_from_scaffold=scaffold)

    # -- evaluate --------------------------------------------------------------------------------
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates the latest (or the given) checkpoint on ``steps`` batches, or until the
        input ends; returns the metrics with ``loss`` and ``global_step``, and writes them
        as summaries in ``eval_dir(name)``."""
        hooks = _check_hooks_type(hooks)
        if steps is not None:
            if steps <= 0:
                raise ValueError(f"Must specify steps > 0, given: {steps}")
            hooks.append(evaluation.StopAfterNEvalsHook(num_evals=steps))
        if not checkpoint_path:
            checkpoint_path = self.latest_checkpoint()
            if not checkpoint_path:
                _log.info("Could not find trained model in model_dir: %s, running "
                          "initialization to evaluate.", self._model_dir)
        with Graph().as_default() as g:
            set_random_seed(self._config.tf_random_seed)
            global_step = self._create_and_assert_global_step(g)
            features, labels, input_hooks = self._input(input_fn, ModeKeys.EVAL)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self._config)
            metric_ops = dict(spec.eval_metric_ops)
            if "loss" in metric_ops:
                raise ValueError('Metric with name "loss" is not allowed, because Estimator '
                                 "already defines a default metric with the same name.")
            metric_ops["loss"] = metrics.mean(spec.loss)
            update_ops = [metric_ops[name][1] for name in sorted(metric_ops)]
            eval_dict = {name: metric_ops[name][0] for name in sorted(metric_ops)}
            if GraphKeys.GLOBAL_STEP in eval_dict:
                raise ValueError('Metric with name "global_step" is not allowed, because '
                                 "Estimator already defines a default metric with the same "
                                 "name.")
            eval_dict[GraphKeys.GLOBAL_STEP] = global_step
            scaffold = spec.scaffold
            if scaffold.local_init_op is not None:
                evaluation.get_or_create_eval_step()
                scaffold = Scaffold(local_init_op=control_flow_ops.group(
                    scaffold.local_init_op, Scaffold.default_local_init_op()),
                    copy_from_scaffold=scaffold)
            results = evaluation.evaluate_once(
                checkpoint_path=checkpoint_path, master=self._config.evaluation_master,
                scaffold=scaffold, eval_ops=control_flow_ops.group(*update_ops),
                final_ops=eval_dict,
                hooks=input_hooks + hooks + list(spec.evaluation_hooks),
                config=self._session_config)
        evaluation.write_dict_to_summary(self.eval_dir(name), results,
                                         int(results[GraphKeys.GLOBAL_STEP]))
        return results

    # -- predict ---------------------------------------------------------------------------------
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields predictions of the latest (or the given) checkpoint until the input ends:
        one example at a time (a dict when the model_fn's predictions are), or whole
        batches with ``yield_single_examples=False``."""
        hooks = _check_hooks_type(hooks)
        if not checkpoint_path:
            checkpoint_path = self.latest_checkpoint()
            if not checkpoint_path:
                _log.info("Could not find trained model in model_dir: %s, running "
                          "initialization to predict.", self._model_dir)
        with Graph().as_default() as g:
            set_random_seed(self._config.tf_random_seed)
            self._create_and_assert_global_step(g)
            features, _, input_hooks = self._input(input_fn, ModeKeys.PREDICT)
            if not uses_dataset_or_queue_runner():
                _log.warning("Input graph does not use tf.data.Dataset or contain a "
                             "QueueRunner. That means predict yields forever. This is probably "
                             "a mistake.")
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self._config)
            predictions = _extract_keys(spec.predictions, predict_keys)
            creator = ChiefSessionCreator(checkpoint_filename_with_path=checkpoint_path,
                                          master=self._config.master, scaffold=spec.scaffold,
                                          config=self._session_config)
            with MonitoredSession(session_creator=creator,
                                  hooks=input_hooks + hooks + list(spec.prediction_hooks)) \
                    as session:
                while not session.should_stop():
                    values = session.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(predictions, dict):
                        yield from values
                    else:
                        for i in range(_batch_length(values)):
                            yield {key: value[i] for key, value in values.items()}

    # -- export ----------------------------------------------------------------------------------
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           assets_extra=None, as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):
        """Exports the latest (or the given) checkpoint as a SavedModel for serving in
        ``export_dir_base/<timestamp>``; returns that path (bytes, as TF)."""
        if experimental_mode != ModeKeys.PREDICT:
            raise NotImplementedError("export_saved_model: only experimental_mode=PREDICT "
                                      "is supported")
        return self._export_saved_model(export_dir_base, serving_input_receiver_fn,
                                        assets_extra, as_text, checkpoint_path)

    def export_savedmodel(self, export_dir_base, serving_input_receiver_fn, assets_extra=None,
                          as_text=False, checkpoint_path=None, strip_default_attrs=False):
        """TF 1.x's name of ``export_saved_model``."""
        return self._export_saved_model(export_dir_base, serving_input_receiver_fn,
                                        assets_extra, as_text, checkpoint_path,
                                        strip_default_attrs)

    def _export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra,
                            as_text, checkpoint_path, strip_default_attrs=True):
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if not checkpoint_path:
            raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
        export_dir = _timestamped_export_dir(os.fsdecode(export_dir_base))
        temp_dir = os.path.join(os.path.dirname(export_dir),
                                "temp-" + os.path.basename(export_dir))
        builder = SavedModelBuilder(temp_dir)
        with Graph().as_default() as g:
            self._create_and_assert_global_step(g)
            set_random_seed(self._config.tf_random_seed)
            receiver = serving_input_receiver_fn()
            spec = self._call_model_fn(receiver.features, None, ModeKeys.PREDICT,
                                       self._config)
            signatures = build_all_signature_defs(receiver.receiver_tensors,
                                                  spec.export_outputs,
                                                  receiver.receiver_tensors_alternatives)
            local_init_op = spec.scaffold.local_init_op if spec.scaffold.local_init_op is not \
                None else Scaffold.default_local_init_op()
            saver = spec.scaffold.saver or Saver(sharded=True)
            from ..client.session import Session
            with Session(config=self._session_config) as session:
                try:
                    saver.restore(session, checkpoint_path)
                except errors.NotFoundError as e:
                    raise ValueError(
                        "Could not load all requested variables from checkpoint. Please make "
                        "sure your model_fn does not expect variables that were not saved in "
                        "the checkpoint.\n\nEncountered error with mode `infer` while "
                        f"restoring checkpoint from: `{checkpoint_path}`. Full "
                        f"Traceback:\n\n{e}") from None
                builder.add_meta_graph_and_variables(
                    session, [tag_constants.SERVING], signature_def_map=signatures,
                    assets_collection=get_collection(GraphKeys.ASSET_FILEPATHS),
                    main_op=local_init_op, saver=saver,
                    strip_default_attrs=strip_default_attrs)
        builder.save(as_text)
        for dest, source in (assets_extra or {}).items():
            target = os.path.join(temp_dir, "assets.extra", dest)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)
        os.rename(temp_dir, export_dir)
        return os.fsencode(export_dir)

    # -- parts -----------------------------------------------------------------------------------
    def _input(self, input_fn, mode):
        """Calls input_fn on the CPU (as TF does) with the arguments it takes."""
        args = model_fn_args(input_fn)
        kwargs = {}
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = self.config
        with device("/cpu:0"):
            return parse_input_fn_result(input_fn(**kwargs))

    def _call_model_fn(self, features, labels, mode, config) -> EstimatorSpec:
        args = model_fn_args(self._model_fn)
        kwargs = {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = config
        _log.info("Calling model_fn.")
        spec = self._model_fn(features=features, **kwargs)
        _log.info("Done calling model_fn.")
        if not isinstance(spec, EstimatorSpec):
            raise ValueError("model_fn should return an EstimatorSpec.")
        return spec

    @staticmethod
    def _create_and_assert_global_step(graph):
        step = training_util.create_global_step(graph)
        assert step is training_util.get_global_step()
        assert step.dtype.base_dtype == dtypes.int64
        return step

    def _global_step_in_checkpoint(self) -> int:
        path = self.latest_checkpoint()
        if not path:
            return 0
        try:
            return int(checkpoint_management.load_variable(path, GraphKeys.GLOBAL_STEP))
        except (errors.NotFoundError, ValueError, KeyError):
            return 0

    def _latest_or_raise(self) -> str:
        path = self.latest_checkpoint()
        if not path:
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")
        return path


def _examples_in_batch(features, labels):
    """A scalar tensor: the leading dimension of the labels, else of the first feature."""
    candidates = [labels] + ([features[k] for k in sorted(features, key=str)]
                             if isinstance(features, dict) else [features])
    for tensor in candidates:
        if isinstance(tensor, Tensor) and tensor.shape.ndims != 0:
            return array_ops.shape(tensor, out_type=dtypes.int64)[0]
    return None


def _check_hooks_type(hooks) -> list:
    hooks = list(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"Hooks must be a SessionRunHook, given: {hook}")
    return hooks


def _extract_keys(predictions, predict_keys):
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    existing = list(predictions.keys())
    predictions = {k: v for k, v in predictions.items() if k in predict_keys}
    if not predictions:
        raise ValueError(f"Expected to run at least one output from {existing}, provided "
                         f"{predict_keys}.")
    return predictions


def _batch_length(values) -> int:
    length = None
    for key, value in values.items():
        length = length or np.shape(value)[0]
        if np.shape(value)[0] != length:
            raise ValueError("Batch length of predictions should be same. "
                             f"{key} has different batch length than others.")
    return length


def _timestamped_export_dir(export_dir_base: str) -> str:
    """export_dir_base/<unix seconds>, a name not taken yet (TF waits for the next second)."""
    for _ in range(10):
        result = os.path.join(export_dir_base, str(int(time.time())))
        if not os.path.exists(result):
            return result
        time.sleep(1)
    raise RuntimeError("Failed to obtain a unique export directory name after 10 attempts.")
