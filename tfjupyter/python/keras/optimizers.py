"""``tensorflow.python.keras.optimizers``: ``tf.keras.optimizers`` (tfjupyter/keras/optimizers.py)."""
from ...keras.optimizers import *  # noqa: F401,F403
