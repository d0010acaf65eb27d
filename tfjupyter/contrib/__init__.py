"""``tf.contrib``: the parts the classic tutorials use."""
from . import layers, rnn, training  # noqa: F401
