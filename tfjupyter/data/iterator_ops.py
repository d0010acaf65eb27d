"""``tf.data.Iterator`` as TensorFlow 1.15 builds it in graph mode.

An iterator is a resource of a device (``kernels/cpu/iterator_kernels.py``); its handle is a
string tensor. ``get_next()`` builds an ``IteratorGetNext`` op (colocated with the iterator), whose
every run takes the next element, and fails with ``OutOfRangeError`` at the end of the data.
"""
from __future__ import annotations

import logging
from typing import Optional

from ..framework import dtypes, nest
from ..framework.ops import (Operation, Tensor, colocate_with, convert_to_tensor, device,
                             get_default_graph)
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


# Ops a dataset captured by value cannot copy: their state would not be the original's.
_STATEFUL_OP_TYPES = {"VariableV2", "Variable", "VarHandleOp", "HashTableV2", "HashTable",
                      "MutableHashTableV2", "MutableHashTable"}


def _in_graph(variant: Tensor, graph) -> Tensor:
    """A dataset's variant in the iterator's ``graph``. TF 1.4-1.12 built a dataset's ops where
    its iterator was made, so programs of that time build datasets outside an Estimator's
    input_fn (TF 1.13+ refuse them: tensorflow/tensorflow#27872); here such a dataset is copied
    into the iterator's graph, with TF 1.13's warning."""
    if variant.graph is graph:
        return variant
    logging.getLogger("tfjupyter").warning(
        "The graph (%s) of the iterator is different from the graph (%s) the dataset: %s was "
        "created in. If you are using the Estimator API, make sure that no part of the dataset "
        "returned by the `input_fn` function is defined outside the `input_fn` function.",
        graph, variant.graph, variant)
    return _captured_by_value(variant, graph)


def _captured_by_value(t: Tensor, graph) -> Tensor:
    """``t`` rebuilt in ``graph`` from copies of the ops it depends on (as TF 1.x's
    Defun(capture_by_value=True) copied a one-shot iterator's dataset)."""
    order, seen, stack = [], set(), [(t.op, False)]
    while stack:    # depth-first: every op after the ops it reads
        op, inputs_done = stack.pop()
        if inputs_done:
            order.append(op)
        elif op not in seen:
            seen.add(op)
            stack.append((op, True))
            stack.extend((x.op, False) for x in op.inputs)
            stack.extend((c, False) for c in op.control_inputs)
    copies = {}
    with graph.as_default():
        for op in order:
            if op.type in _STATEFUL_OP_TYPES:
                raise ValueError(f"Cannot capture a stateful node (name:{op.name}, type:"
                                 f"{op.type}) by value: the dataset ({t.op.name}) belongs to "
                                 "another graph than its iterator; build the dataset in the "
                                 "iterator's graph (an Estimator's input_fn) instead.")
            attrs = {k: v for k, v in op._attrs.items() if k != "_class"}
            copies[op] = graph.create_op(
                op.type, [copies[x.op].outputs[x.value_index] for x in op.inputs], attrs,
                name=op.name, control_inputs=[copies[c] for c in op.control_inputs])
    return copies[t.op].outputs[t.value_index]


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
        variant = _in_graph(dataset._variant, get_default_graph())
        with variant.graph.as_default(), device("/device:CPU:0"):
            handle = _new_op("OneShotIterator", [variant],
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
        mine, theirs = self._structure, dataset._structure
        nest.assert_same_structure(mine.template, theirs.template)
        if mine.types != theirs.types:
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset with "
                            f"output types {dataset.output_types!r}.")
        if not all(a.is_compatible_with(b) for a, b in zip(mine.shapes, theirs.shapes)):
            raise TypeError(f"Expected output shapes compatible with {self.output_shapes!r} but "
                            f"got dataset with output shapes {dataset.output_shapes!r}.")
        variant = _in_graph(dataset._variant, self._handle.graph)
        with self._handle.graph.as_default(), self._colocated():
            return _new_op("MakeIterator", [variant, self._handle], {},
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
