"""``tf.keras.datasets``: only what is on this machine — tfjupyter never downloads. A loader
reads Keras's cache file (``~/.keras/datasets/<file>``, where ``tf.keras`` keeps what it
downloaded) and otherwise says where to put it."""
from . import boston_housing, fashion_mnist, imdb, mnist  # noqa: F401

__all__ = ["boston_housing", "fashion_mnist", "imdb", "mnist"]
