"""``tf.estimator.inputs.numpy_input_fn``: an input_fn over numpy arrays (or a dict of them),
batched, shuffled and repeated by ``tf.data`` (TF 1.15 uses feeding queues; the batches are
the same: ``batch_size`` rows, the last one of the last epoch smaller).

As TF's feeding queues, the arrays stay out of the graph: the dataset yields batches of row
indices and a ``py_func`` gathers those rows, so a large array (MNIST's 55,000 images) never
becomes a constant in the graph, its checkpoints' meta graph or the events file."""
from __future__ import annotations

import collections

import numpy as np

from ...data.dataset_ops import Dataset
from ...framework import dtypes
from ...ops.script_ops import py_func

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
        dataset = Dataset.range(_row_count(x_arrays))
        if num_epochs != 1:
            dataset = dataset.repeat(num_epochs)
        if shuffle:
            dataset = dataset.shuffle(queue_capacity)
        dataset = dataset.batch(batch_size).prefetch(1)
        batch = _gather_rows(elements, dataset.make_one_shot_iterator().get_next())
        if y_arrays is None:
            return dict(batch) if isinstance(batch, dict) else batch
        features_batch, target = batch
        return (dict(features_batch) if isinstance(features_batch, dict) else features_batch,
                dict(target) if isinstance(target, dict) else target)
    return input_fn


def _row_count(arrays) -> int:
    return len(next(iter(arrays.values()))) if isinstance(arrays, dict) else len(arrays)


def _gather_rows(elements, indices):
    """The rows ``indices`` (a batch of row numbers) of every array in ``elements`` (nested
    dicts/tuples of arrays), as tensors of the same structure: one py_func for them all."""
    flat, rebuild = _flatten(elements)
    kinds = [dtypes.string if a.dtype.kind in "OSU" else dtypes.as_dtype(a.dtype) for a in flat]
    tensors = py_func(lambda rows: [a[rows] for a in flat], [indices], kinds, stateful=True,
                      name="numpy_input_fn_rows")
    for tensor, array in zip(tensors, flat):
        tensor.set_shape((None,) + array.shape[1:])
    return rebuild(iter(tensors))


def _flatten(structure):
    """(the arrays of a nested dict/tuple, in order; a function rebuilding the structure from
    an iterator over replacements)."""
    if isinstance(structure, dict):
        parts = [(key, _flatten(value)) for key, value in structure.items()]
        return ([a for _, (flat, _) in parts for a in flat],
                lambda it: type(structure)((key, rebuild(it)) for key, (_, rebuild) in parts))
    if isinstance(structure, tuple):
        parts = [_flatten(value) for value in structure]
        return ([a for flat, _ in parts for a in flat],
                lambda it: tuple(rebuild(it) for _, rebuild in parts))
    return [structure], lambda it: next(it)


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
