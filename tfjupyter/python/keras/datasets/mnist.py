"""``tensorflow.python.keras.datasets.mnist``."""
from ....keras.datasets.mnist import *  # noqa: F401,F403
