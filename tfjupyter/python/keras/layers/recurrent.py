"""``tensorflow.python.keras.layers.recurrent``."""
from ....keras.layers import (GRU, LSTM)  # noqa: F401
