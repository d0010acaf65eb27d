"""``tensorflow.python.estimator.canned.dnn``: DNNClassifier, DNNRegressor."""
from ....estimator.canned.dnn import *  # noqa: F401,F403
