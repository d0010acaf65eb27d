"""``tensorflow.python.training``."""
