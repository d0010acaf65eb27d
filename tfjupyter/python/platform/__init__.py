"""``tensorflow.python.platform``."""
