"""``tf.keras.models``: the model classes."""
from .engine.sequential import Sequential  # noqa: F401
from .engine.training import Model  # noqa: F401

__all__ = ["Model", "Sequential"]
