"""``tensorflow.python.platform.gfile``: ``tf.gfile`` (tfjupyter/gfile.py)."""
from ...gfile import *  # noqa: F401,F403
