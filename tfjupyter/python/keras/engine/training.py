"""``tensorflow.python.keras.engine.training`` (tfjupyter/keras/engine/training.py)."""
from ....keras.engine.training import *  # noqa: F401,F403
