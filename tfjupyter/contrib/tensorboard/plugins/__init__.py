"""``tf.contrib.tensorboard.plugins``."""
from . import projector  # noqa: F401
