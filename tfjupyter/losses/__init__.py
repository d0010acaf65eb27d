"""``tf.losses``: TensorFlow 1.x's loss functions (mean_squared_error, softmax_cross_entropy,
...), their reductions and weights, and the loss collections (get_total_loss, ...).

losses_impl.py: the losses and ``compute_weighted_loss``; util.py: the collections.
"""
from .losses_impl import *  # noqa: F401,F403
from .util import *  # noqa: F401,F403
from . import losses_impl as _losses_impl, util as _util

__all__ = _losses_impl.__all__ + _util.__all__
