"""``tf.contrib``: the parts the classic tutorials use."""
from . import layers, training  # noqa: F401
