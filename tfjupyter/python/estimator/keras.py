"""``tensorflow.python.estimator.keras``: model_to_estimator (tfjupyter/estimator/keras.py)."""
from ...estimator.keras import *  # noqa: F401,F403
