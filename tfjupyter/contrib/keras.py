"""``tf.contrib.keras`` (TF 1.2–1.x): the Keras API before it moved to ``tf.keras``; the same
modules and classes as ``tf.keras`` (``tf.contrib.keras.utils.get_file`` is
``tf.keras.utils.get_file``)."""
from ..keras import (activations, backend, callbacks, datasets, initializers,  # noqa: F401
                     layers, losses, metrics, models, optimizers, utils)
