"""``tf.keras.estimator``: ``model_to_estimator`` (tfjupyter/estimator/keras.py)."""
from ..estimator.keras import model_to_estimator  # noqa: F401

__all__ = ["model_to_estimator"]
