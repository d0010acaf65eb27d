"""``tensorflow.python.keras``: ``tf.keras`` (tfjupyter/keras/) at TF 1.15's module paths."""
from . import (activations, backend, callbacks, datasets, engine, estimator,  # noqa: F401
               initializers, layers, losses, metrics, models, optimizers, utils)
from .layers import Input  # noqa: F401
from .models import Model, Sequential  # noqa: F401
