"""``tf.keras.preprocessing``: sequence.pad_sequences (what the text tutorials use)."""
from . import sequence  # noqa: F401

__all__ = ["sequence"]
