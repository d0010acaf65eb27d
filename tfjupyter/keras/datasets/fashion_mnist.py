"""``tf.keras.datasets.fashion_mnist.load_data``: ((x_train, y_train), (x_test, y_test)), uint8
images [N, 28, 28] and labels [N], from the four gzipped IDX files Keras keeps in
``~/.keras/datasets/fashion-mnist/`` (no download)."""
from __future__ import annotations

import gzip
import os

import numpy as np

from ..utils import get_file

__all__ = ["load_data"]

_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def load_data():
    paths = [get_file(name, origin=_ORIGIN + name,
                      cache_subdir=os.path.join("datasets", "fashion-mnist"))
             for name in ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
                          "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")]
    arrays = []
    for labels_path, images_path in (paths[:2], paths[2:]):
        # Keras skips the IDX headers: 8 bytes for labels, 16 for images
        with gzip.open(labels_path, "rb") as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
        with gzip.open(images_path, "rb") as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(len(labels), 28, 28)
        arrays.append((images, labels))
    return tuple(arrays)
