"""``tf.contrib.framework``: the global-step helpers TF 1.x programs import from contrib before
they moved to tf.train (cifar10_train.py's get_or_create_global_step)."""
from ..train.training_util import (assert_global_step, create_global_step,  # noqa: F401
                                   get_global_step, get_or_create_global_step)

__all__ = ["assert_global_step", "create_global_step", "get_global_step",
           "get_or_create_global_step"]
