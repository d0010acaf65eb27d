"""``tensorflow.python.keras.layers.embeddings``."""
from ....keras.layers import (Embedding)  # noqa: F401
