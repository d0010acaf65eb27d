"""``tensorflow.python.keras.initializers``: ``tf.keras.initializers`` (tfjupyter/keras/initializers.py)."""
from ...keras.initializers import *  # noqa: F401,F403
