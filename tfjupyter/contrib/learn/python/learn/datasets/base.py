"""``tensorflow.contrib.learn.python.learn.datasets.base``: TF 1.x's CSV dataset readers and
its two small bundled datasets. Nothing is downloaded: iris is the copy scikit-learn ships (the
same file TensorFlow shipped); Boston housing, which TensorFlow bundled and scikit-learn no
longer does, is read from a local copy of TensorFlow's ``boston_house_prices.csv``."""
from __future__ import annotations

import collections
import csv
import os
from typing import Optional

import numpy as np

__all__ = ["Dataset", "Datasets", "load_csv_with_header", "load_csv_without_header",
           "load_iris", "load_boston"]

Dataset = collections.namedtuple("Dataset", ["data", "target"])
Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def load_csv_with_header(filename, target_dtype, features_dtype,
                         target_column: int = -1) -> Dataset:
    """A CSV file whose first row is ``n_samples,n_features,...``, then one example a row (the
    target in ``target_column``), as TensorFlow's reader."""
    with open(filename, newline="") as f:
        rows = csv.reader(f)
        header = next(rows)
        n_samples, n_features = int(header[0]), int(header[1])
        data = np.zeros((n_samples, n_features), dtype=features_dtype)
        target = np.zeros((n_samples,), dtype=target_dtype)
        for i, row in enumerate(rows):
            if i >= n_samples:
                raise ValueError(f"{filename}: more rows than the {n_samples} its header says")
            target[i] = np.asarray(row.pop(target_column), dtype=target_dtype)
            data[i] = np.asarray(row, dtype=features_dtype)
    return Dataset(data=data, target=target)


def load_csv_without_header(filename, target_dtype, features_dtype,
                            target_column: int = -1) -> Dataset:
    """A CSV file of one example a row (the target in ``target_column``)."""
    data, target = [], []
    with open(filename, newline="") as f:
        for row in csv.reader(f):
            target.append(row.pop(target_column))
            data.append(np.asarray(row, dtype=features_dtype))
    return Dataset(data=np.array(data), target=np.array(target).astype(target_dtype))


def load_iris(data_path: Optional[str] = None) -> Dataset:
    """The 150 iris flowers: ``data`` [150, 4] float64, ``target`` [150] int (0-2)."""
    if data_path is None:
        try:
            import sklearn.datasets
        except ImportError:
            raise ImportError("load_iris reads the iris.csv that scikit-learn ships: pip "
                              "install scikit-learn, or pass data_path") from None
        data_path = os.path.join(os.path.dirname(sklearn.datasets.__file__), "data", "iris.csv")
    return load_csv_with_header(data_path, target_dtype=np.int64, features_dtype=np.float64)


def load_boston(data_path: Optional[str] = None) -> Dataset:
    """Boston housing from a local copy of TensorFlow's ``boston_house_prices.csv`` (506
    examples, 13 features): TensorFlow bundled it, scikit-learn (since 1.2) does not, and
    nothing here downloads."""
    if data_path is None or not os.path.isfile(data_path):
        raise FileNotFoundError(
            f"load_boston needs a local copy of TensorFlow's boston_house_prices.csv "
            f"(tensorflow/contrib/learn/python/learn/datasets/data/); "
            f"{'none given' if data_path is None else repr(data_path) + ' does not exist'}. "
            f"tfjupyter does not download data: pass data_path=")
    return load_csv_with_header(data_path, target_dtype=np.float64, features_dtype=np.float64)
