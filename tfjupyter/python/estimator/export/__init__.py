"""``tensorflow.python.estimator.export``."""
