"""``tensorflow.python.keras.activations``: ``tf.keras.activations`` (tfjupyter/keras/activations.py)."""
from ...keras.activations import *  # noqa: F401,F403
