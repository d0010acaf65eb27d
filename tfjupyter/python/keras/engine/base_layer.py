"""``tensorflow.python.keras.engine.base_layer`` (tfjupyter/keras/engine/base_layer.py)."""
from ....keras.engine.base_layer import *  # noqa: F401,F403
