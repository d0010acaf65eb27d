"""``tensorflow.python.framework``."""
