"""``tensorflow.python.keras.datasets``: ``tf.keras.datasets``."""
from ....keras.datasets import *  # noqa: F401,F403
