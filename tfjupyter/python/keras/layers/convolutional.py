"""``tensorflow.python.keras.layers.convolutional``."""
from ....keras.layers import (Conv1D, Conv2D, Convolution1D, Convolution2D)  # noqa: F401
