"""``tf.data.Iterator`` as TensorFlow 1.15 builds it in graph mode.

An iterator is a resource of a device (``kernels/cpu/iterator_kernels.py``); its handle is a
string tensor. ``get_next()`` builds an ``IteratorGetNext`` op (colocated with the iterator), whose
every run takes the next element, and fails with ``OutOfRangeError`` at the end of the data.
"""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes, nest
from ..framework.ops import Operation, Tensor, colocate_with, convert_to_tensor, device
from ..framework.ops import op as _new_op
from .dataset_ops import Dataset
from .structure import HasStructure, Structure, structure_from

__all__ = ["Iterator"]


def _placeholders_in(t: Tensor):
    """The placeholders ``t`` depends on (a one-shot iterator cannot take fed values)."""
    seen, pending, found = set(), [t.op], []
    while pending:
        op = pending.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "Placeholder":
            found.append(op)
        pending.extend(x.op for x in op.inputs)
    return found


class Iterator(HasStructure):
    """Elements of a dataset, one ``get_next()`` run at a time (``tf.data.Iterator``)."""

    def __init__(self, handle: Tensor, structure: Structure,
                 initializer: Optional[Operation] = None):
        self._handle = handle
        self._structure = structure
        self._initializer = initializer

    # -- construction --
    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name: Optional[str] = None,
                       output_classes=None) -> "Iterator":
        """An iterator of that element structure, not bound to a dataset: each
        ``make_initializer(dataset)`` is an op that (re)starts it on ``dataset``."""
        structure = structure_from(output_types, output_shapes)
        with device("/device:CPU:0"):
            attrs = dict(structure.attrs(), shared_name=shared_name or "", container="")
            handle = _new_op("IteratorV2", [], attrs, name="Iterator").outputs[0]
        return Iterator(handle, structure)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None,
                           output_classes=None) -> "Iterator":
        """The iterator whose ``string_handle()`` value ``string_handle`` holds (usually fed
        through a placeholder, to switch between iterators)."""
        structure = structure_from(output_types, output_shapes)
        handle = convert_to_tensor(string_handle, dtype=dtypes.string)
        with device("/device:CPU:0"):
            op = _new_op("IteratorFromStringHandle", [handle], structure.attrs(),
                         name="IteratorFromStringHandle")
        return Iterator(op.outputs[0], structure)

    @staticmethod
    def _one_shot(dataset: Dataset) -> "Iterator":
        fed = _placeholders_in(dataset._variant)
        if fed:
            raise ValueError(f"Cannot capture a placeholder (name:{fed[0].name}, type:Placeholder) "
                             "by value: a one-shot iterator cannot be parameterized; use "
                             "make_initializable_iterator() instead.")
        structure = dataset._structure
        with dataset._variant.graph.as_default(), device("/device:CPU:0"):
            handle = _new_op("OneShotIterator", [dataset._variant],
                             dict(structure.attrs(), shared_name="", container=""),
                             name="OneShotIterator").outputs[0]
        return Iterator(handle, structure)

    @property
    def initializer(self) -> Operation:
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    # -- ops --
    def _colocated(self):
        return colocate_with(self._handle.op)

    def make_initializer(self, dataset: Dataset, name: Optional[str] = None) -> Operation:
        """An op that starts this iterator on ``dataset``, whose elements must have this
        iterator's structure, dtypes and compatible shapes."""
        if not isinstance(dataset, Dataset):
            raise TypeError(f"make_initializer() needs a Dataset, got {dataset!r}")
        if dataset._variant.graph is not self._handle.graph:
            raise ValueError(f"The dataset ({dataset._variant.op.name}) belongs to another graph "
                             f"than the iterator ({self._handle.op.name}): as in TF 1.13+, a "
                             "dataset stays in the graph it was built in; an Estimator's "
                             "input_fn must build its dataset itself.")
        mine, theirs = self._structure, dataset._structure
        nest.assert_same_structure(mine.template, theirs.template)
        if mine.types != theirs.types:
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset with "
                            f"output types {dataset.output_types!r}.")
        if not all(a.is_compatible_with(b) for a, b in zip(mine.shapes, theirs.shapes)):
            raise TypeError(f"Expected output shapes compatible with {self.output_shapes!r} but "
                            f"got dataset with output shapes {dataset.output_shapes!r}.")
        with self._handle.graph.as_default(), self._colocated():
            return _new_op("MakeIterator", [dataset._variant, self._handle], {},
                           name=name or "MakeIterator")

    def get_next(self, name: Optional[str] = None):
        """The next element (nested as the dataset's); OutOfRangeError when there is none."""
        with self._handle.graph.as_default(), self._colocated():
            op = _new_op("IteratorGetNext", [self._handle], self._structure.attrs(),
                         name=name or "IteratorGetNext")
        return self._structure.pack(op.outputs)

    def string_handle(self, name: Optional[str] = None) -> Tensor:
        """This iterator's handle as a string, to feed to a ``from_string_handle`` iterator."""
        with self._handle.graph.as_default(), self._colocated():
            return _new_op("IteratorToStringHandle", [self._handle], {},
                           name=name or "IteratorToStringHandle").outputs[0]
