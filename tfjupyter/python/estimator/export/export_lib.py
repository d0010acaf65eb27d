"""``tensorflow.python.estimator.export.export_lib``: ``tf.estimator.export``."""
from ....estimator.export import *  # noqa: F401,F403
