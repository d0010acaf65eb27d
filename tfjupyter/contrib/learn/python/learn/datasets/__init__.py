"""``tf.contrib.learn.datasets``: the MNIST reader (the same as tutorials' input_data)."""
from . import mnist  # noqa: F401
