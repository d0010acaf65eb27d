"""``tf.estimator.inputs.numpy_input_fn``: an input_fn over numpy arrays (or a dict of them),
batched, shuffled and repeated by ``tf.data`` (TF 1.15 uses feeding queues; the batches are
the same: ``batch_size`` rows, the last one of the last epoch smaller)."""
from __future__ import annotations

import collections

import numpy as np

from ...data.dataset_ops import Dataset

__all__ = ["numpy_input_fn"]


def _check_shuffle(shuffle) -> None:
    if not isinstance(shuffle, bool):
        raise ValueError("shuffle must be provided and explicitly set as boolean (it is "
                         f"recommended to set it as True for training); got {shuffle}")


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                   num_threads=1):
    """An input_fn returning ``(features, target)`` tensors: ``features`` a dict when ``x``
    is one (else one tensor), ``target`` likewise from ``y`` (absent when y is None).
    ``num_epochs=None`` repeats forever; ``shuffle`` must be given."""
    _check_shuffle(shuffle)
    if not isinstance(x, dict) and not isinstance(x, np.ndarray):
        raise TypeError(f"x must be a dict or array; got {type(x).__name__}")
    if isinstance(x, dict) and isinstance(y, dict):
        shared = sorted(set(x) & set(y))
        if shared:
            raise ValueError(f"{len(shared)} duplicate keys are found in both x and y: "
                             f"{shared}")
    x_arrays = {k: np.asarray(v) for k, v in x.items()} if isinstance(x, dict) else \
        np.asarray(x)
    y_arrays = None if y is None else (
        {k: np.asarray(v) for k, v in y.items()} if isinstance(y, dict) else np.asarray(y))
    _check_lengths(x_arrays, y_arrays)

    def input_fn():
        if isinstance(x_arrays, dict):   # TF orders feature columns by name
            features = collections.OrderedDict(sorted(x_arrays.items()))
        else:
            features = x_arrays
        elements = features if y_arrays is None else (features, y_arrays)
        dataset = Dataset.from_tensor_slices(elements)
        if num_epochs != 1:
            dataset = dataset.repeat(num_epochs)
        if shuffle:
            dataset = dataset.shuffle(queue_capacity)
        dataset = dataset.batch(batch_size).prefetch(1)
        batch = dataset.make_one_shot_iterator().get_next()
        if y_arrays is None:
            return dict(batch) if isinstance(batch, dict) else batch
        features_batch, target = batch
        return (dict(features_batch) if isinstance(features_batch, dict) else features_batch,
                dict(target) if isinstance(target, dict) else target)
    return input_fn


def _lengths(arrays):
    if isinstance(arrays, dict):
        return {k: v.shape for k, v in arrays.items()}, {len(v) for v in arrays.values()}
    return arrays.shape, {len(arrays)}


def _check_lengths(x_arrays, y_arrays) -> None:
    x_shapes, x_lengths = _lengths(x_arrays)
    y_shapes, y_lengths = _lengths(y_arrays) if y_arrays is not None else (None, set())
    if len(x_lengths | y_lengths) > 1:
        raise ValueError("Length of tensors in x and y is mismatched. All elements in x and y "
                         f"must have the same length.\nShapes in x: {x_shapes}\n"
                         f"Shapes in y: {y_shapes}\n")
