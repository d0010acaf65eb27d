"""``tensorflow.python.keras.engine.input_layer`` (tfjupyter/keras/engine/input_layer.py)."""
from ....keras.engine.input_layer import *  # noqa: F401,F403
