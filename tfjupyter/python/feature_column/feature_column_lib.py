"""``tensorflow.python.feature_column.feature_column_lib``: ``tf.feature_column``."""
from ...feature_column import *  # noqa: F401,F403
