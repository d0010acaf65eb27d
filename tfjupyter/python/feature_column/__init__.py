"""``tensorflow.python.feature_column``."""
