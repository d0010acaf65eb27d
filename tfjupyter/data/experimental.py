"""``tf.data.experimental``: the few names TF 1.x input functions use."""
from __future__ import annotations

from .dataset_ops import AUTOTUNE  # noqa: F401

__all__ = ["AUTOTUNE", "shuffle_and_repeat", "map_and_batch"]


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """``dataset.apply(shuffle_and_repeat(...))``: shuffle then repeat, a new order each epoch."""
    return lambda dataset: dataset.shuffle(buffer_size, seed).repeat(count)


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """``dataset.apply(map_and_batch(...))``: map, then batch."""
    parallel = num_parallel_calls or num_parallel_batches
    return lambda dataset: dataset.map(map_func, parallel).batch(batch_size, drop_remainder)
