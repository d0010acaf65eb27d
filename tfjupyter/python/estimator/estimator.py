"""``tensorflow.python.estimator.estimator``: Estimator (tfjupyter/estimator/estimator.py)."""
from ...estimator.estimator import *  # noqa: F401,F403
