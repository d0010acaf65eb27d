"""``tensorflow.python.estimator.mode_keys``: ModeKeys."""
from ...estimator.mode_keys import *  # noqa: F401,F403
