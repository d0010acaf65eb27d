"""``tensorflow.python.estimator.model_fn``: EstimatorSpec, and ModeKeys as TF imports it there."""
from ...estimator.model_fn import *  # noqa: F401,F403
from ...estimator.mode_keys import ModeKeys  # noqa: F401
