"""``tensorflow.python.keras.backend``: ``tf.keras.backend`` (tfjupyter/keras/backend.py)."""
from ...keras.backend import *  # noqa: F401,F403
