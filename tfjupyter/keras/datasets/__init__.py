"""``tf.keras.datasets``: only what is on this machine — tfjupyter never downloads. A loader
reads Keras's cache file (``~/.keras/datasets/<file>``, where ``tf.keras`` keeps what it
downloaded) and otherwise says where to put it."""
from . import fashion_mnist, mnist  # noqa: F401

__all__ = ["fashion_mnist", "mnist"]
