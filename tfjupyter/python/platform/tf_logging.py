"""``tensorflow.python.platform.tf_logging``: ``tf.logging`` (tfjupyter/logging.py)."""
from ...logging import *  # noqa: F401,F403
