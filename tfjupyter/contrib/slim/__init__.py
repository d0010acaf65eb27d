"""``tf.contrib.slim``: prefetch_queue (the CIFAR-10 multi-GPU trainer's input stage)."""
from . import prefetch_queue  # noqa: F401
