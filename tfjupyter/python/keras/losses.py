"""``tensorflow.python.keras.losses``: ``tf.keras.losses`` (tfjupyter/keras/losses.py)."""
from ...keras.losses import *  # noqa: F401,F403
