"""``tf.data`` (TensorFlow 1.15, graph mode): datasets (``dataset_ops.py``), iterators
(``iterator_ops.py``), ``tf.data.experimental`` basics. The ops and their kernels are in
``tfjupyter/ops/data_ops.py`` and ``kernels/cpu/dataset_kernels.py``, ``iterator_kernels.py``.
"""
from __future__ import annotations

from . import experimental  # noqa: F401
from .dataset_ops import (AUTOTUNE, Dataset, FixedLengthRecordDataset,  # noqa: F401
                          TFRecordDataset, TextLineDataset)
from .iterator_ops import Iterator  # noqa: F401

__all__ = ["Dataset", "Iterator", "TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset",
           "experimental"]


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """``tf.compat.v1.data.make_one_shot_iterator``."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset: Dataset, shared_name=None) -> Iterator:
    """``tf.compat.v1.data.make_initializable_iterator``."""
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes
