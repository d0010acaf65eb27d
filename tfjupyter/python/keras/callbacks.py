"""``tensorflow.python.keras.callbacks``: ``tf.keras.callbacks`` (tfjupyter/keras/callbacks.py)."""
from ...keras.callbacks import *  # noqa: F401,F403
