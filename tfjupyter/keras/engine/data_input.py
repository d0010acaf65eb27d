"""Where ``fit`` / ``evaluate`` / ``predict`` take their batches from: numpy arrays
(``ArrayInput``: batches of ``batch_size``, shuffled each epoch when asked; or, with
``steps``, all the arrays at each step) or a ``tf.data`` dataset (``DatasetInput``: its
elements are the batches, read with an initializable iterator in Keras's session, restarted
each epoch unless ``steps`` says how many batches an epoch is). Each batch read from a
dataset goes through ``prepare(x, y, sample_weight)``, the model's check and conversion of
its arrays into lists (inputs, targets, sample weights).
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Optional

import numpy as np

from ...data import Dataset
from ...framework.errors import OutOfRangeError


class ArrayInput:
    """Batches of numpy arrays: the inputs ``xs``, and for training or evaluation one target
    array ``ys[i]`` and one sample-weight array ``weights[i]`` per trained output. With
    ``steps``, each of the ``steps`` batches is all the arrays, as TF 1.15 feeds arrays when
    ``steps_per_epoch`` is given."""

    def __init__(self, xs, ys, weights, batch_size: int, shuffle, steps: Optional[int] = None):
        self.xs, self.ys, self.weights = xs, ys, weights
        self.batch_size, self.shuffle, self.steps = int(batch_size), shuffle, steps
        self.samples = None if steps is not None else len(xs[0])

    def _sliced(self, index):
        return ([x[index] for x in self.xs],
                None if self.ys is None else [y[index] for y in self.ys],
                None if self.weights is None else [w[index] for w in self.weights])

    def split(self, fraction: float):
        """(training, validation): the last ``fraction`` of the samples validate, as Keras
        splits before shuffling."""
        if self.steps is not None:
            raise ValueError("`validation_split` needs batches of samples; it cannot be used "
                             "with `steps_per_epoch` on arrays.")
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"validation_split must be in (0, 1); got {fraction}.")
        at = int(self.samples * (1.0 - fraction))
        if at == 0 or at == self.samples:
            raise ValueError(f"validation_split={fraction} leaves no samples for training or "
                             f"validation ({self.samples} samples).")
        training = ArrayInput(*self._sliced(slice(0, at)), self.batch_size, self.shuffle)
        return training, ArrayInput(*self._sliced(slice(at, None)), self.batch_size, False)

    def batches(self, session=None):
        if self.steps is not None:
            for _ in range(self.steps):
                yield self.xs, self.ys, self.weights
            return
        order = np.arange(self.samples)
        if self.shuffle == "batch":
            # Keras's batch_shuffle: whole batches change places; a last, partial batch stays
            # last.
            whole = self.samples // self.batch_size * self.batch_size
            blocks = order[:whole].reshape(-1, self.batch_size)
            np.random.shuffle(blocks)
            order = np.concatenate([blocks.reshape(-1), order[whole:]])
        elif self.shuffle:
            np.random.shuffle(order)
        for start in range(0, self.samples, self.batch_size):
            if self.shuffle:
                yield self._sliced(order[start:start + self.batch_size])
            else:
                yield self._sliced(slice(start, start + self.batch_size))


class DatasetInput:
    """Batches from a dataset of ``inputs``, ``(inputs, targets)`` or ``(inputs, targets,
    sample_weights)`` elements."""

    def __init__(self, dataset: Dataset, steps: Optional[int], with_targets: bool, prepare,
                 graph=None):
        self.steps, self.with_targets, self.prepare = steps, with_targets, prepare
        self.samples = None
        self.batch_size = None
        with graph.as_default() if graph is not None else contextlib.nullcontext():
            self.iterator = dataset.make_initializable_iterator()
            self.next_element = self.iterator.get_next()
        self._started = False

    def batches(self, session):
        if self.steps is None or not self._started:
            session.run(self.iterator.initializer)
            self._started = True
        step = 0
        while self.steps is None or step < self.steps:
            try:
                element = session.run(self.next_element)
            except OutOfRangeError:
                if self.steps is not None:
                    warnings.warn(f"Your dataset ran out of data after {step} of {self.steps} "
                                  "steps; make it repeat (dataset.repeat()) for the epochs "
                                  "you ask for.")
                    self._started = False
                return
            if not isinstance(element, tuple):
                element = (element,)
            if self.with_targets and len(element) < 2:
                raise ValueError("A dataset given to fit/evaluate must yield (inputs, targets) "
                                 "or (inputs, targets, sample_weights).")
            x = element[0]
            y = element[1] if len(element) > 1 else None
            w = element[2] if len(element) > 2 else None
            yield self.prepare(x, y, w)
            step += 1
