"""The graph ops behind ``tf.data`` (the API is ``tfjupyter/data/``), as TensorFlow 1.x's dataset
and iterator ops.

A dataset op (``TensorSliceDataset``, ``MapDataset``, ...) outputs one scalar ``variant``: when it
runs, its kernel (``kernels/cpu/dataset_kernels.py``) makes a description of the dataset from its
inputs, and nothing is read yet. The element structure is in the attrs ``output_types`` and
``output_shapes`` (flat, one entry per component). A function (a ``map``'s, a ``filter``'s
predicate, ...) is a ``framework/func_graph.Function`` attr, traced as control flow's are; the
outer tensors it captured are the op's inputs after its datasets and arguments, and the variables
it uses are reference inputs, last (attr ``Nrefs``).

An iterator is device state, like a queue: ``IteratorV2`` (or ``OneShotIterator``, which also
takes the dataset it starts on) outputs a string handle, the iterator's name in its device's
ResourceManager; ``MakeIterator`` points it at a dataset, ``IteratorGetNext`` takes the next
element (``kernels/cpu/iterator_kernels.py``). ``IteratorFromStringHandle`` takes a handle fed at
run time and checks it names an iterator of the expected types.
"""
from __future__ import annotations

from ..framework import dtypes
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape
from . import _control_flow_util as util

__all__ = []

SOURCE_DATASETS = ("TensorSliceDataset", "TensorDataset", "RangeDataset", "TFRecordDataset",
                   "TextLineDataset", "FixedLengthRecordDataset", "GeneratorDataset")
COMBINING_DATASETS = ("ZipDataset", "ConcatenateDataset", "BatchDataset", "PaddedBatchDataset",
                      "ShuffleDataset", "RepeatDataset", "TakeDataset", "SkipDataset",
                      "CacheDataset", "PrefetchDataset")
FUNCTION_DATASETS = ("MapDataset", "FilterDataset", "FlatMapDataset", "InterleaveDataset")
DATASET_TYPES = SOURCE_DATASETS + COMBINING_DATASETS + FUNCTION_DATASETS
ITERATOR_TYPES = ("IteratorV2", "OneShotIterator", "IteratorFromStringHandle")


def _dataset_shape(op):
    if op.type in FUNCTION_DATASETS:
        util.bind_ref_inputs(op)
    for t in op.inputs:
        if t.dtype is dtypes.variant and t.op.type not in DATASET_TYPES + ("Placeholder",):
            raise TypeError(f"{op.type} '{op.name}': input {t.name} is not a dataset")
    types, shapes = op.get_attr("output_types"), op.get_attr("output_shapes")
    if len(types) != len(shapes):
        raise ValueError(f"{op.type} '{op.name}': {len(types)} output_types but {len(shapes)} "
                         "output_shapes")
    return [(dtypes.variant, TensorShape([]))]


for _type in DATASET_TYPES:
    register_op(_type, stateful=_type == "GeneratorDataset")(_dataset_shape)


@register_op("IteratorV2", stateful=True)
@register_op("OneShotIterator", stateful=True)
@register_op("IteratorFromStringHandle", stateful=True)
@register_op("IteratorToStringHandle", stateful=True)
def _handle_shape(op):
    return [(dtypes.string, TensorShape([]))]


@register_op("MakeIterator", stateful=True)
def _make_iterator_shape(op):
    dataset, handle = op.inputs
    if dataset.dtype is not dtypes.variant:
        raise TypeError(f"MakeIterator '{op.name}': input 0 must be a dataset, got "
                        f"{dataset.dtype.name}")
    return []


@register_op("IteratorGetNext", stateful=True)
def _get_next_shape(op):
    return list(zip(op.get_attr("output_types"), op.get_attr("output_shapes")))


for _type in DATASET_TYPES + ITERATOR_TYPES + ("IteratorToStringHandle", "MakeIterator",
                                                "IteratorGetNext"):
    NotDifferentiable(_type)
