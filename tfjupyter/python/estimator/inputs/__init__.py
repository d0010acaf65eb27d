"""``tensorflow.python.estimator.inputs``."""
