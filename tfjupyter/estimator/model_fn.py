"""``tf.estimator.EstimatorSpec``: what a ``model_fn`` returns, validated as TF 1.15 does (the
same checks, error types and messages), and the check of a ``model_fn``'s arguments."""
from __future__ import annotations

import collections
import functools
import inspect
import logging

from ..framework.ops import Operation, Tensor, get_default_graph
from ..ops import array_ops
from ..train.basic_session_run_hooks import SessionRunHook
from ..train.monitored_session import Scaffold
from ..variables import Variable
from .mode_keys import ModeKeys

__all__ = ["EstimatorSpec"]

_log = logging.getLogger("tfjupyter")

_GRAPH_ERROR = ('{0} with "{1}" must be from the default graph. Possible causes of this error '
                "include: \n\n1) {0} was created outside the context of the default graph."
                '\n\n2) The object passed through to EstimatorSpec was not created in the most '
                'recent call to "model_fn".')
_VALID_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "self", "config"}


class EstimatorSpec(collections.namedtuple("EstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
        "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
        "prediction_hooks"])):
    """Ops and objects returned from a ``model_fn``. TRAIN needs ``loss`` and ``train_op``,
    EVAL ``loss``, PREDICT ``predictions``; ``eval_metric_ops`` is a dict of
    ``(value, update_op)`` pairs; ``export_outputs`` a dict of ``ExportOutput``s (PREDICT
    defaults it to a ``PredictOutput`` of the predictions)."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        from .export.export_output import default_export_outputs
        train_op = _validate_train_op(train_op, mode)
        loss = _validate_loss(loss, mode)
        predictions = _validate_predictions(predictions, mode)
        if mode == ModeKeys.PREDICT:
            export_outputs = default_export_outputs(export_outputs, predictions)
        scaffold = scaffold or Scaffold()
        if not isinstance(scaffold, Scaffold):
            raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
        return super().__new__(
            cls, mode=mode, predictions=predictions, loss=loss, train_op=train_op,
            eval_metric_ops=_validate_eval_metric_ops(eval_metric_ops),
            export_outputs=export_outputs,
            training_chief_hooks=_validate_hooks(training_chief_hooks),
            training_hooks=_validate_hooks(training_hooks), scaffold=scaffold,
            evaluation_hooks=_validate_hooks(evaluation_hooks),
            prediction_hooks=_validate_hooks(prediction_hooks))

    def _replace(self, **kwds):
        if "mode" in kwds and self.mode != kwds["mode"]:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        return EstimatorSpec(*map(kwds.pop, self._fields, list(self)))


def _check_is_tensor(x, name: str):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be Tensor, given: {x}")
    return x


def _check_graph(value, what: str, label: str) -> None:
    if value.graph is not get_default_graph():
        raise ValueError(_GRAPH_ERROR.format(what, label))


def _validate_train_op(train_op, mode):
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    if not isinstance(train_op, (Operation, Tensor, Variable)):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op}")
    if isinstance(train_op, Variable):
        train_op = train_op.op
    _check_graph(train_op, "train_op", train_op.name)
    return train_op


def _validate_loss(loss, mode):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    loss = _check_is_tensor(loss, "loss")
    shape = loss.get_shape()
    if shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}")
    if shape.ndims != 0:
        loss = array_ops.reshape(loss, [])
    _check_graph(loss, "loss", loss.name)
    return loss


def _validate_predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        predictions = {k: _check_is_tensor(v, f"predictions[{k}]") for k, v in predictions.items()}
        for key, value in predictions.items():
            _check_graph(value, "prediction values", f"{key}: {value.name}")
        return predictions
    predictions = _check_is_tensor(predictions, "predictions")
    _check_graph(predictions, "prediction values", predictions.name)
    return predictions


def _validate_hooks(hooks) -> tuple:
    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
    return hooks


def _validate_eval_metric_ops(eval_metric_ops) -> dict:
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError("Values of eval_metric_ops must be (metric_value, update_op) "
                            f"tuples, given: {value} for key: {key}")
        for element in value:
            _check_graph(element, "eval_metric_ops", f"{key}: {element.name}")
    return dict(eval_metric_ops)


def model_fn_args(fn) -> set:
    """The argument names of ``fn`` a caller may pass (a function, a bound method; of a
    ``functools.partial``, those it does not bind), as TF's ``fn_args``."""
    if isinstance(fn, functools.partial):
        names = list(inspect.signature(fn.func).parameters)[len(fn.args):]
        return {n for n in names if n not in (fn.keywords or {})}
    return set(inspect.signature(fn).parameters)


def verify_model_fn_args(model_fn, params) -> None:
    """TF's check of a model_fn's arguments against the Estimator's ``params``."""
    args = model_fn_args(model_fn)
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(f"model_fn ({model_fn}) does not include params argument, but params "
                         f"({params}) is passed to Estimator.")
    if params is None and "params" in args:
        _log.warning("Estimator's model_fn (%s) includes params argument, but params are not "
                     "passed to Estimator.", model_fn)
    unexpected = sorted(args - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}")
