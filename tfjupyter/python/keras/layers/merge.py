"""``tensorflow.python.keras.layers.merge``."""
from ....keras.layers import (Add, Average, Concatenate, Multiply, Subtract, add, average,
                              concatenate, multiply, subtract)  # noqa: F401
