"""Where ``fit`` / ``evaluate`` / ``predict`` take their batches from: numpy arrays
(``ArrayInput``: batches of ``batch_size``, shuffled each epoch when asked) or a ``tf.data``
dataset (``DatasetInput``: its elements are the batches, read with an initializable iterator
in Keras's session, restarted each epoch unless ``steps`` says how many batches an epoch is).
Each batch read from a dataset goes through ``prepare(x, y, sample_weight)``, the model's
check and conversion of its arrays.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Optional

import numpy as np

from ...data import Dataset
from ...framework.errors import OutOfRangeError


class ArrayInput:
    def __init__(self, xs, y, sample_weight, batch_size: int, shuffle):
        self.xs, self.y, self.sample_weight = xs, y, sample_weight
        self.batch_size, self.shuffle = int(batch_size), shuffle
        self.samples = len(xs[0])
        self.steps = None

    def split(self, fraction: float):
        """(training, validation): the last ``fraction`` of the samples validate, as Keras
        splits before shuffling."""
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"validation_split must be in (0, 1); got {fraction}.")
        at = int(self.samples * (1.0 - fraction))
        if at == 0 or at == self.samples:
            raise ValueError(f"validation_split={fraction} leaves no samples for training or "
                             f"validation ({self.samples} samples).")

        def part(s):
            return ArrayInput([x[s] for x in self.xs], None if self.y is None else self.y[s],
                              None if self.sample_weight is None else self.sample_weight[s],
                              self.batch_size, False)
        training = part(slice(0, at))
        training.shuffle = self.shuffle
        return training, part(slice(at, None))

    def batches(self, session=None):
        order = np.arange(self.samples)
        if self.shuffle == "batch":
            starts = np.arange(0, self.samples, self.batch_size)
            np.random.shuffle(starts)
            order = np.concatenate([order[s:s + self.batch_size] for s in starts])
        elif self.shuffle:
            np.random.shuffle(order)
        for start in range(0, self.samples, self.batch_size):
            index = order[start:start + self.batch_size]
            if not self.shuffle:
                index = slice(start, start + self.batch_size)
            yield ([x[index] for x in self.xs],
                   None if self.y is None else self.y[index],
                   None if self.sample_weight is None else self.sample_weight[index])


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
