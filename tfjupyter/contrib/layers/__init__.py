"""``tf.contrib.layers``: regularizers, initializers and the layers the classic tutorials use."""
from .initializers import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .regularizers import *  # noqa: F401,F403
from . import initializers as _initializers, layers as _layers, regularizers as _regularizers

__all__ = _initializers.__all__ + _layers.__all__ + _regularizers.__all__
