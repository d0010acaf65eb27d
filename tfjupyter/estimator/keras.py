"""``tf.keras.estimator.model_to_estimator`` (TF 1.15): an Estimator whose model_fn builds a
compiled Keras model again on the input_fn's features.

As TensorFlow's:

- The model_fn clones the model (``tf.keras.models.clone_model``: the same layers, names and
  so variable names) on the features: a dict keyed by the model's ``input_names``, a list in
  their order, or one tensor. The learning phase is fixed per mode (1 in training), so
  Dropout drops and BatchNormalization normalizes by the batch and updates its moving
  averages in training only.
- TRAIN: the compiled loss (the batch mean of the per-example loss, plus the layers'
  regularization losses) minimized by the compiled optimizer, stepping the global step, with
  the model's ``updates`` (BatchNormalization's) run by every step. EVAL: the loss and each
  compiled metric as a streaming mean over the evaluation (``acc`` for ``'accuracy'``, as
  TF 1.x's Keras names it). Predictions, and the serving signature's outputs, are keyed by
  the model's ``output_names``.
- The model's current weights start training: they are written once to
  ``model_dir/keras/keras_model.ckpt`` and warm-start the trainable variables of a model_dir
  without a checkpoint.

Keras trains one-output models here (``engine/training.py``), and so does this.
"""
from __future__ import annotations

import logging
import os

from ..framework import dtypes
from ..framework.ops import Graph, name_scope
from ..client.session import Session
from .. import metrics as tf_metrics
from ..ops import control_flow_ops, math_ops
from ..train import checkpoint_management
from ..train.saver import Saver
from ..train.training_util import get_global_step
from ..variables import variables_initializer
from .estimator import Estimator, config_with_model_dir
from .export.export_output import PredictOutput
from .mode_keys import ModeKeys
from .model_fn import EstimatorSpec

__all__ = ["model_to_estimator"]

_log = logging.getLogger("tfjupyter")
_SERVING_KEY = "serving_default"


def model_to_estimator(keras_model=None, keras_model_path=None, custom_objects=None,
                       model_dir=None, config=None, checkpoint_format="saver") -> Estimator:
    """An Estimator training, evaluating and exporting the compiled ``keras_model``, starting
    from its current weights (see the module's docstring), or the model of the HDF5 file
    ``keras_model_path`` (``tf.keras.models.load_model``, needs h5py: its weights, compiled
    as saved; ``custom_objects`` are what the file's custom layers, losses and so on name).
    Layers, custom ones too, are cloned from their constructor's arguments."""
    if keras_model is None and keras_model_path is None:
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model is not None and keras_model_path is not None:
        raise ValueError("Please specity either `keras_model` or `keras_model_path`, but not "
                         "both.")
    if keras_model_path is not None:
        from ..keras.saving.hdf5 import load_model   # tf.keras imports this module
        _log.info("Loading models from %s", keras_model_path)
        keras_model = load_model(keras_model_path, custom_objects=custom_objects)
    if checkpoint_format not in ("saver", "checkpoint"):
        raise ValueError('Checkpoint format must be one of "checkpoint" or "saver". Got '
                         f"{checkpoint_format}")
    if checkpoint_format == "checkpoint":
        raise NotImplementedError("model_to_estimator(checkpoint_format='checkpoint') writes "
                                  "TF 2's object-based checkpoints, which tfjupyter does not; "
                                  "use 'saver' (TF 1.15's default).")
    if keras_model.optimizer is None:
        raise ValueError("The given keras model has not been compiled yet. Please compile the "
                         "model with `model.compile()` before calling `model_to_estimator()`.")
    if not keras_model.inputs:
        raise ValueError(f'The Keras model "{keras_model.name}" has no inputs yet: give its '
                         "first layer an input_shape, or build it, before model_to_estimator.")
    config = config_with_model_dir(config, model_dir)
    first_checkpoint = _save_first_checkpoint(keras_model, config)
    return Estimator(_model_fn_of(keras_model), config=config,
                     warm_start_from=first_checkpoint)


def _model_fn_of(keras_model):
    from ..keras import metrics as keras_metrics   # tf.keras imports this module: not before
    loss_fn, metric_ids = keras_model.compiled_loss_and_metrics

    def model_fn(features, labels, mode):
        model = _clone_on(keras_model, features, mode)
        output = model.outputs[0]
        predictions = dict(zip(keras_model.output_names, model.outputs))
        loss = train_op = eval_metric_ops = None
        if mode != ModeKeys.PREDICT:
            target = _ordered(labels, keras_model.output_names, "labels", "output")[0]
            per_example = loss_fn(target, output)
            with name_scope("loss"):
                loss = math_ops.reduce_mean(per_example)
                if model.losses:
                    loss = loss + math_ops.add_n(
                        [math_ops.cast(l, loss.dtype) for l in model.losses])
            eval_metric_ops = {}
            with name_scope("metrics"):
                for identifier in metric_ids:
                    name, function = keras_metrics.resolve(identifier, loss_fn,
                                                           output.get_shape())
                    values = math_ops.cast(function(target, output), dtypes.float32)
                    eval_metric_ops[name] = tf_metrics.mean(values, name=name)
        if mode == ModeKeys.TRAIN:
            with name_scope("training"):
                minimize = keras_model.optimizer.minimize(
                    loss, global_step=get_global_step(), var_list=model.trainable_weights)
                train_op = control_flow_ops.group(minimize, *model.updates)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op,
                             eval_metric_ops=eval_metric_ops,
                             export_outputs={_SERVING_KEY: PredictOutput(predictions)})
    return model_fn


def _clone_on(keras_model, features, mode):
    """The model built again in the default graph on ``features``, in ``mode``'s learning
    phase (None features: on new input placeholders)."""
    from ..keras import backend
    from ..keras.models import clone_model
    backend.set_learning_phase(1 if mode == ModeKeys.TRAIN else 0)
    inputs = None
    if features is not None:
        inputs = _ordered(features, keras_model.input_names, "features", "input")
        if len(inputs) != len(keras_model.inputs):
            raise ValueError(f"The Keras model has {len(keras_model.inputs)} input(s) "
                             f"{keras_model.input_names}; the features give {len(inputs)}.")
        # Keras's inputs are of the model's dtype (floatx); input_fns often give float64.
        inputs = [t if t.dtype.base_dtype == want.dtype.base_dtype else math_ops.cast(t, want.dtype)
                  for t, want in zip(inputs, keras_model.inputs)]
    return clone_model(keras_model, input_tensors=inputs)


def _ordered(structure, names, what: str, kind: str) -> list:
    """A dict of tensors as a list in ``names``' order (TF's check and message), a list as it
    is, a tensor as a list of one."""
    if isinstance(structure, dict):
        different = set(structure) ^ set(names)
        if different:
            raise KeyError(f"The dictionary passed into {what} does not have the expected {kind} "
                           f"keys defined in the keras model.\n\tExpected keys: {set(names)}\n\t"
                           f"{what} keys: {set(structure)}\n\tDifference: {different}")
        return [structure[name] for name in names]
    if isinstance(structure, (list, tuple)):
        return list(structure)
    return [structure]


def _save_first_checkpoint(keras_model, config) -> str:
    """The model's current weights, under the clone's variable names, in
    ``model_dir/keras/keras_model.ckpt`` (written once: an existing one is kept)."""
    keras_dir = os.path.join(config.model_dir, "keras")
    latest = checkpoint_management.latest_checkpoint(keras_dir)
    if latest:
        return latest
    weights = keras_model.get_weights()
    os.makedirs(keras_dir, exist_ok=True)
    with Graph().as_default() as graph:
        clone = _clone_on(keras_model, None, ModeKeys.TRAIN)
        with Session(graph=graph, config=config.session_config) as session, \
                session.as_default():
            session.run(variables_initializer(clone.weights))
            clone.set_weights(weights)
            path = Saver(var_list=clone.weights).save(
                session, os.path.join(keras_dir, "keras_model.ckpt"))
    _log.info("Warm-starting with the Keras model's weights from %s", path)
    return path

