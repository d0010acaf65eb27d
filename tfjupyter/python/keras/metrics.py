"""``tensorflow.python.keras.metrics``: ``tf.keras.metrics`` (tfjupyter/keras/metrics.py)."""
from ...keras.metrics import *  # noqa: F401,F403
