"""``tensorflow.python.estimator.canned.linear``: LinearClassifier, LinearRegressor."""
from ....estimator.canned.linear import *  # noqa: F401,F403
