"""``tf.keras.datasets.mnist.load_data``: ((x_train, y_train), (x_test, y_test)) from Keras's
cached 'mnist.npz' (no download)."""
from __future__ import annotations

import numpy as np

from ..utils import get_file

__all__ = ["load_data"]


def load_data(path: str = "mnist.npz"):
    path = get_file(path, origin="https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
                                 "mnist.npz")
    with np.load(path, allow_pickle=False) as data:
        return (data["x_train"], data["y_train"]), (data["x_test"], data["y_test"])
