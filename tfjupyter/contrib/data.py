"""``tf.contrib.data`` (TF 1.3–1.x): the ``tf.data`` classes under their contrib names, as TF
1.4 programs import them (``tf.contrib.data.TextLineDataset(path).filter(...)``), and the
contrib transformations that became ``tf.data`` arguments or ``tf.data.experimental``."""
from __future__ import annotations

from ..data import (Dataset, FixedLengthRecordDataset, Iterator,  # noqa: F401
                    TextLineDataset, TFRecordDataset)
from ..data.experimental import AUTOTUNE, map_and_batch, shuffle_and_repeat  # noqa: F401

__all__ = ["Dataset", "Iterator", "TextLineDataset", "TFRecordDataset", "FixedLengthRecordDataset",
           "AUTOTUNE", "map_and_batch", "shuffle_and_repeat", "batch_and_drop_remainder",
           "padded_batch_and_drop_remainder"]


def batch_and_drop_remainder(batch_size):
    """For ``Dataset.apply``: ``batch(batch_size, drop_remainder=True)``."""
    return lambda dataset: dataset.batch(batch_size, drop_remainder=True)


def padded_batch_and_drop_remainder(batch_size, padded_shapes, padding_values=None):
    """For ``Dataset.apply``: ``padded_batch(..., drop_remainder=True)``."""
    return lambda dataset: dataset.padded_batch(batch_size, padded_shapes, padding_values,
                                                drop_remainder=True)
