"""``tensorflow.python.keras.estimator``: model_to_estimator."""
from ....keras.estimator import *  # noqa: F401,F403
