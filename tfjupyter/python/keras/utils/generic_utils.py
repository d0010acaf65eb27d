"""``tensorflow.python.keras.utils.generic_utils``."""
from ....keras.utils import (Progbar)  # noqa: F401
