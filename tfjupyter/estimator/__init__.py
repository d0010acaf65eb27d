"""``tf.estimator`` (TensorFlow 1.15): ``Estimator`` over a ``model_fn`` returning an
``EstimatorSpec``, its ``RunConfig`` (with ``TF_CONFIG``), ``train_and_evaluate`` locally or
as a task of a cluster, ``export`` (serving input receivers, export outputs) and ``inputs``
(numpy and pandas input_fns).

- ``estimator.py``: train / evaluate / predict / export_saved_model.
- ``model_fn.py``: EstimatorSpec and its checks; ``mode_keys.py``: ModeKeys.
- ``run_config.py``: RunConfig and TF_CONFIG; ``task_server.py``: the task's server.
- ``training.py``: TrainSpec, EvalSpec, train_and_evaluate; ``evaluation.py``: one pass;
  ``exporter.py``: the exporters train_and_evaluate runs after evaluations.
- ``canned/``: DNN, linear and wide & deep classifiers and regressors over tf.feature_column.
"""
from . import export, inputs  # noqa: F401
from .canned import (DNNClassifier, DNNLinearCombinedClassifier, DNNRegressor,  # noqa: F401
                     LinearClassifier, LinearRegressor)
from .estimator import Estimator, WarmStartSettings  # noqa: F401
from .exporter import Exporter, FinalExporter, LatestExporter  # noqa: F401
from .mode_keys import ModeKeys  # noqa: F401
from .model_fn import EstimatorSpec  # noqa: F401
from .run_config import RunConfig  # noqa: F401
from .training import EvalSpec, TrainSpec, train_and_evaluate  # noqa: F401
from ..train.basic_session_run_hooks import (CheckpointSaverHook,  # noqa: F401
                                             CheckpointSaverListener, FinalOpsHook,
                                             LoggingTensorHook, NanLossDuringTrainingError,
                                             NanTensorHook, SessionRunArgs, SessionRunContext,
                                             SessionRunHook, SessionRunValues,
                                             StepCounterHook, StopAtStepHook,
                                             SummarySaverHook)

__all__ = ["Estimator", "EstimatorSpec", "ModeKeys", "RunConfig", "TrainSpec", "EvalSpec",
           "train_and_evaluate", "WarmStartSettings", "export", "inputs", "Exporter",
           "FinalExporter", "LatestExporter", "DNNClassifier", "DNNRegressor",
           "DNNLinearCombinedClassifier", "LinearClassifier", "LinearRegressor",
           "CheckpointSaverHook", "CheckpointSaverListener", "FinalOpsHook",
           "LoggingTensorHook", "NanLossDuringTrainingError", "NanTensorHook", "SessionRunArgs",
           "SessionRunContext", "SessionRunHook", "SessionRunValues", "StepCounterHook",
           "StopAtStepHook", "SummarySaverHook"]
