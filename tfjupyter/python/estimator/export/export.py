"""``tensorflow.python.estimator.export.export``: serving input receivers."""
from ....estimator.export.export import *  # noqa: F401,F403
