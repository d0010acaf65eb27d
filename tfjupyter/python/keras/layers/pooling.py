"""``tensorflow.python.keras.layers.pooling``."""
from ....keras.layers import (AveragePooling1D, AveragePooling2D, AvgPool1D, AvgPool2D,
                              GlobalAveragePooling2D, GlobalMaxPooling2D, MaxPool1D, MaxPool2D,
                              MaxPooling1D, MaxPooling2D)  # noqa: F401
