"""``tensorflow.python.estimator.inputs.inputs``: ``tf.estimator.inputs``."""
from ....estimator.inputs import *  # noqa: F401,F403
