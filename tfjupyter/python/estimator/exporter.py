"""``tensorflow.python.estimator.exporter``: the exporters."""
from ...estimator.exporter import *  # noqa: F401,F403
