"""``tensorflow.python.estimator.export.export_output``: export outputs."""
from ....estimator.export.export_output import *  # noqa: F401,F403
