"""``tf.keras.datasets.boston_housing``: the Boston housing prices from Keras's cached
'boston_housing.npz' (no download), split as TF 1.15's Keras does."""
from __future__ import annotations

import numpy as np

from ..utils import get_file

__all__ = ["load_data"]


def load_data(path: str = "boston_housing.npz", test_split: float = 0.2, seed: int = 113):
    """((x_train, y_train), (x_test, y_test)): the rows shuffled with ``seed``, the last
    ``test_split`` of them for testing."""
    if not 0 <= test_split < 1:
        raise ValueError(f"test_split must be in [0, 1), got {test_split}")
    path = get_file(path, origin="https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
                                 "boston_housing.npz")
    with np.load(path, allow_pickle=False) as f:
        x, y = f["x"], f["y"]
    np.random.seed(seed)
    indices = np.arange(len(x))
    np.random.shuffle(indices)
    x, y = x[indices], y[indices]
    n_train = int(len(x) * (1 - test_split))
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])
