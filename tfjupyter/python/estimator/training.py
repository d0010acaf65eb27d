"""``tensorflow.python.estimator.training``: TrainSpec, EvalSpec, train_and_evaluate."""
from ...estimator.training import *  # noqa: F401,F403
