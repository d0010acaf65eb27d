"""``tensorflow.python.keras.utils.np_utils``."""
from ....keras.utils import (to_categorical)  # noqa: F401
