"""``tf.layers``: TensorFlow 1.x's layers (tf.layers.dense, conv2d, batch_normalization, ...),
with TF's variable names ('dense/kernel', 'conv2d_1/bias', 'batch_normalization/moving_mean'),
scopes and collections, so TF 1.x programs and their checkpoints work unchanged.

base.py: the Layer base (variable scopes, reuse, collections); core.py: Dense, Dropout,
Flatten; convolutional.py: Conv1D, Conv2D; pooling.py: max/average pooling;
normalization.py: BatchNormalization.
"""
from .base import Layer  # noqa: F401
from .convolutional import *  # noqa: F401,F403
from .core import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from . import convolutional as _convolutional, core as _core, normalization as _normalization
from . import pooling as _pooling

__all__ = (["Layer"] + _core.__all__ + _convolutional.__all__ + _pooling.__all__ +
           _normalization.__all__)
