"""``tf.keras.experimental`` (TF 1.15): a Keras model as a SavedModel and back
(``keras/saving/saved_model.py``)."""
from .saving.saved_model import export_saved_model, load_from_saved_model  # noqa: F401

__all__ = ["export_saved_model", "load_from_saved_model"]
