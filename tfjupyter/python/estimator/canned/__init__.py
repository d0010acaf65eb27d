"""``tensorflow.python.estimator.canned``."""
