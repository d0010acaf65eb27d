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

__all__ = ["element_is_batch"]

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


def element_is_batch(get_next) -> bool:
    """Whether an ``IteratorGetNext`` op's element is a batch (its first component's leading
    dimension counts the examples) or one example. A batch when the dataset its iterator starts
    on was batched (``batch``/``padded_batch`` anywhere along its inputs); when the graph does
    not show that dataset (a handle fed at run time, a partition without the initializer), when
    the first component's static leading dimension is unknown, as ``batch()`` leaves it."""
    iterator = get_next.inputs[0].op
    if iterator.type == "OneShotIterator":
        pending = [iterator.inputs[0].op]
    else:
        pending = [c.inputs[0].op for c in iterator.outputs[0].consumers()
                   if c.type == "MakeIterator"]
    if not pending:
        shapes = get_next.get_attr("output_shapes")
        return bool(shapes) and shapes[0].ndims is not None and shapes[0].ndims >= 1 \
            and shapes[0].as_list()[0] is None
    seen = set()
    while pending:
        op = pending.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type in ("BatchDataset", "PaddedBatchDataset"):
            return True
        pending.extend(t.op for t in op.inputs if t.dtype is dtypes.variant)
    return False


@register_op("IteratorGetNext", stateful=True)
def _get_next_shape(op):
    return list(zip(op.get_attr("output_types"), op.get_attr("output_shapes")))


for _type in DATASET_TYPES + ITERATOR_TYPES + ("IteratorToStringHandle", "MakeIterator",
                                                "IteratorGetNext"):
    NotDifferentiable(_type)
