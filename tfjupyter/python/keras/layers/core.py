"""``tensorflow.python.keras.layers.core``."""
from ....keras.layers import (Activation, Dense, Dropout, Flatten, Lambda, Reshape)  # noqa: F401
