"""``tensorflow.python.keras.layers.normalization``."""
from ....keras.layers import (BatchNormalization)  # noqa: F401
