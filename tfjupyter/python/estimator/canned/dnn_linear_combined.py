"""``tensorflow.python.estimator.canned.dnn_linear_combined``: DNNLinearCombinedClassifier."""
from ....estimator.canned.dnn_linear_combined import *  # noqa: F401,F403
