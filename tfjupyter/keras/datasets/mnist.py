"""``tf.keras.datasets.mnist.load_data``: ((x_train, y_train), (x_test, y_test)) from Keras's
cached 'mnist.npz' (no download)."""
from __future__ import annotations

import os

import numpy as np

__all__ = ["load_data"]


def cache_path(filename: str) -> str:
    """Where tf.keras keeps a downloaded dataset file (KERAS_HOME, else ~/.keras)."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(home, "datasets", filename)


def load_data(path: str = "mnist.npz"):
    full = path if os.path.isabs(path) else cache_path(path)
    if not os.path.exists(full):
        raise FileNotFoundError(
            f"tf.keras.datasets.mnist: {full} does not exist, and tfjupyter never downloads. "
            "Copy Keras's mnist.npz there (from https://storage.googleapis.com/tensorflow/"
            "tf-keras-datasets/mnist.npz), or use tf.datasets.load_digits() for a small "
            "bundled digits set.")
    with np.load(full, allow_pickle=False) as data:
        return (data["x_train"], data["y_train"]), (data["x_test"], data["y_test"])
