"""``tensorflow.python.estimator.estimator_lib``: all of ``tf.estimator``."""
from ...estimator import *  # noqa: F401,F403
