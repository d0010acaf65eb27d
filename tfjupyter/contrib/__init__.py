"""``tf.contrib``: the parts the classic tutorials use."""
from . import layers  # noqa: F401
