"""``tf.contrib.learn.datasets``: the MNIST reader (the same as tutorials' input_data), TF 1.x's
CSV readers and ``load_dataset(name)``, which never downloads: 'iris' is bundled (through
scikit-learn), 'mnist' reads the IDX files of a local ``MNIST-data`` directory, 'boston' and
'dbpedia' need local copies of their files and say so when there are none."""
from __future__ import annotations

import os

import numpy as np

from . import base, mnist  # noqa: F401
from .base import Dataset, Datasets, load_boston, load_iris  # noqa: F401

__all__ = ["DATASETS", "load_dataset", "load_mnist", "load_dbpedia", "base", "mnist"]


def load_mnist(train_dir: str = "MNIST-data") -> Datasets:
    """MNIST from the IDX files in ``train_dir`` (TF 1.x's default directory name)."""
    return mnist.read_data_sets(train_dir)


def load_dbpedia(size: str = "small", test_with_fake_data: bool = False,
                 data_dir: str = "/tmp/dbpedia_data") -> Datasets:
    """DBpedia ontology classification from ``<data_dir>/dbpedia_csv/{train,test}.csv`` (rows:
    class, title, abstract), where TF 1.x downloaded it; ``size='small'`` reads
    ``{train,test}_small.csv`` when they exist, as TF's cut-down copy."""
    if test_with_fake_data:
        fake = Dataset(np.array([["title", "abstract"]] * 2, dtype=object), np.array([1, 2]))
        return Datasets(train=fake, validation=None, test=fake)
    folder = os.path.join(data_dir, "dbpedia_csv")

    def path(part: str) -> str:
        small = os.path.join(folder, f"{part}_small.csv")
        return small if size == "small" and os.path.isfile(small) else \
            os.path.join(folder, f"{part}.csv")
    missing = [p for p in (path("train"), path("test")) if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(f"load_dbpedia reads local files and does not download; missing "
                                f"{', '.join(missing)} (TF 1.x's dbpedia_csv.tar.gz, extracted "
                                f"into {data_dir})")
    train = base.load_csv_without_header(path("train"), np.int32, np.str_, target_column=0)
    test = base.load_csv_without_header(path("test"), np.int32, np.str_, target_column=0)
    return Datasets(train=train, validation=None, test=test)


DATASETS = {"iris": load_iris, "boston": load_boston, "mnist": load_mnist,
            "dbpedia": load_dbpedia}


def load_dataset(name: str, size: str = "small", test_with_fake_data: bool = False):
    """TF 1.x's ``learn.datasets.load_dataset``: a ``Dataset`` (iris, boston) or ``Datasets``
    (mnist, dbpedia)."""
    if name not in DATASETS:
        raise ValueError(f"Name of dataset is not found: {name}")
    if name == "dbpedia":
        return load_dbpedia(size, test_with_fake_data)
    return DATASETS[name]()
