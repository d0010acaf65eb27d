"""TF 1.15's canned estimators (the v1 ones ``tf.estimator`` has in 1.15), on
``tf.feature_column``: heads (``head.py``), DNN, linear and wide & deep models."""
from .dnn import DNNClassifier, DNNRegressor  # noqa: F401
from .dnn_linear_combined import DNNLinearCombinedClassifier  # noqa: F401
from .linear import LinearClassifier, LinearRegressor  # noqa: F401

__all__ = ["DNNClassifier", "DNNRegressor", "DNNLinearCombinedClassifier", "LinearClassifier",
           "LinearRegressor"]
