"""``tensorflow.python.keras.engine.network`` (tfjupyter/keras/engine/network.py)."""
from ....keras.engine.network import *  # noqa: F401,F403
