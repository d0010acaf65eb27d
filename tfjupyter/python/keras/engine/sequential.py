"""``tensorflow.python.keras.engine.sequential`` (tfjupyter/keras/engine/sequential.py)."""
from ....keras.engine.sequential import *  # noqa: F401,F403
