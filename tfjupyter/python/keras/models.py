"""``tensorflow.python.keras.models``: ``tf.keras.models`` (tfjupyter/keras/models.py)."""
from ...keras.models import *  # noqa: F401,F403
