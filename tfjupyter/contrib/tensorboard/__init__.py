"""``tf.contrib.tensorboard``: the embedding projector's configuration."""
from . import plugins  # noqa: F401
