"""``tensorflow.python.ops.metrics``: ``tf.metrics`` (tfjupyter/metrics.py)."""
from ...metrics import *  # noqa: F401,F403
