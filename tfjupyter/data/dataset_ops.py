"""``tf.data.Dataset`` as TensorFlow 1.15 builds it in graph mode.

A ``Dataset`` is a graph tensor (a dataset op's ``variant`` output, ``tfjupyter/ops/data_ops.py``)
plus its element structure: nested tuples and dicts of components, each with a dtype and a static
shape (``output_types``, ``output_shapes``, ``output_classes``). As in ``tf.data``, a list is one
component (a tensor), not a structure. Transformations build new dataset ops on it; functions
(``map``, ``filter``, ``flat_map``, ``interleave``) are traced into function graphs as
``tf.cond``'s branches are, called with an element's components as arguments (a tuple is spread
over the arguments, a dict is one argument). Iterators are in ``iterator_ops.py``.
"""
from __future__ import annotations

import itertools
from typing import Callable, List, Optional

import numpy as np

from ..framework import dtypes, nest
from ..framework.func_graph import Function
from ..framework.ops import Tensor, convert_to_tensor, device, get_default_graph, name_scope
from ..framework.ops import op as _new_op
from ..framework.tensor_shape import TensorShape
from ..ops import _control_flow_util as util
from ..ops import data_ops as _data_ops  # noqa: F401  (registers the ops)
from .structure import HasStructure, Structure, as_shape, flatten_up_to, normalize, structure_from

__all__ = ["Dataset", "TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset",
           "AUTOTUNE"]

AUTOTUNE = -1
_traced = itertools.count()


def _int64(value, name: str) -> Tensor:
    return convert_to_tensor(value, dtype=dtypes.int64, name=name)


def _dataset_op(op_type: str, inputs: list, structure: Structure, attrs: Optional[dict] = None,
                variables=(), control_inputs=()) -> Tensor:
    """A dataset op, placed on a CPU (datasets live in host memory) of whatever job and task
    the device scope names."""
    graph = get_default_graph()
    with device("/device:CPU:0"):
        op = util.create(graph, op_type, inputs, variables,
                         dict(structure.attrs(), **(attrs or {})), name=op_type,
                         control_inputs=control_inputs)
    return op.outputs[0]


# -- functions -------------------------------------------------------------------------------------
class _TracedFunction:
    """A dataset function traced into a function graph: the Function attr, the outer tensors
    it captured (op inputs), the variables it uses (reference inputs), its result."""

    def __init__(self, fn: Callable, structure: Structure, transformation: str, op_type: str):
        if not callable(fn):
            raise TypeError(f"{transformation}: the function must be callable, got {fn!r}")
        graph = get_default_graph()
        name = f"{transformation.split('.')[-1].rstrip('()')}_fn_{next(_traced)}"
        g, result = util.trace(fn, name, graph, structure.arg_specs(), structure.template)
        if isinstance(result, list):   # as TF 1.15: a list result is a tuple of components
            result = tuple(result)
        self.result = result
        with g.as_default():
            try:
                normalized = result if isinstance(result, Dataset) else normalize(result)
            except (TypeError, ValueError) as e:
                raise TypeError(f"Unsupported return value from function passed to "
                                f"{transformation} ({op_type}): {result!r} ({e})") from None
        self.normalized = normalized
        flat = [normalized._variant] if isinstance(normalized, Dataset) \
            else nest.flatten(normalized)
        outputs = [util.as_output(g, t, f"The function passed to {transformation} ({op_type})")
                   for t in flat]
        values, self.variables, inputs = util.unify_captures([g], [len(structure.types)])
        self.captured = values
        self.function = Function(name, g, inputs[0], outputs)
        self.control_inputs = util.outer_controls([g])

    def returned_dataset(self, transformation: str, op_type: str) -> "Dataset":
        if not isinstance(self.normalized, Dataset):
            raise TypeError(f"`map_func` passed to {transformation} ({op_type}) must return a "
                            f"`Dataset` object, got {self.result!r}")
        return self.normalized


# -- datasets --------------------------------------------------------------------------------------
class Dataset(HasStructure):
    """A dataset of elements (``tf.data.Dataset``)."""

    def __init__(self, variant: Tensor, structure: Structure):
        self._variant = variant
        self._structure = structure

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} shapes: {self.output_shapes}, types: "
                f"{self.output_types}>")

    def __iter__(self):
        raise RuntimeError("dataset.__iter__() is only supported when eager execution is "
                           "enabled; use make_one_shot_iterator() or "
                           "make_initializable_iterator() and get_next() in a Session.")

    def _transformed(self, op_type: str, inputs: list, structure: Structure,
                     attrs: Optional[dict] = None, fn: Optional[_TracedFunction] = None
                     ) -> "Dataset":
        with self._variant.graph.as_default(), name_scope(None):
            inputs = [self._variant] + inputs
            if fn is None:
                return Dataset(_dataset_op(op_type, inputs, structure, attrs), structure)
            variant = _dataset_op(op_type, inputs + fn.captured, structure, attrs,
                                  fn.variables, fn.control_inputs)
        return Dataset(variant, structure)

    # -- sources --
    @staticmethod
    def from_tensors(tensors) -> "Dataset":
        """One element: ``tensors``."""
        value = normalize(tensors)
        structure = Structure.of(value)
        return Dataset(_dataset_op("TensorDataset", nest.flatten(value), structure), structure)

    @staticmethod
    def from_tensor_slices(tensors) -> "Dataset":
        """The slices of ``tensors`` along their first dimension, which they must share."""
        value = normalize(tensors)
        flat = nest.flatten(value)
        shapes = []
        for t in flat:
            if t.shape.ndims == 0:
                raise ValueError(f"from_tensor_slices: {t.name} is a scalar; every component "
                                 "must have rank >= 1 to be sliced")
            shapes.append(t.shape[1:] if t.shape.ndims is not None else TensorShape(None))
        firsts = {t.shape.as_list()[0] for t in flat if t.shape.ndims}
        firsts.discard(None)
        if len(firsts) > 1:
            raise ValueError(f"Dimensions {' and '.join(str(d) for d in sorted(firsts))} are not "
                             "compatible: from_tensor_slices' components must have the same "
                             "size in dimension 0")
        structure = Structure(value, [t.dtype for t in flat], shapes)
        return Dataset(_dataset_op("TensorSliceDataset", flat, structure), structure)

    @staticmethod
    def range(*args) -> "Dataset":
        """``range(stop)``, ``range(start, stop[, step])``: int64 elements, as Python's range."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Dataset.range() takes 1 to 3 arguments, got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else \
            (args + (1,))[:3] if len(args) == 2 else args
        structure = Structure(None, [dtypes.int64], [TensorShape([])])
        inputs = [_int64(start, "start"), _int64(stop, "stop"), _int64(step, "step")]
        return Dataset(_dataset_op("RangeDataset", inputs, structure), structure)

    @staticmethod
    def zip(datasets) -> "Dataset":
        """Elements of the datasets side by side (nested as ``datasets``), until one ends."""
        parts = nest.flatten(datasets)
        for d in parts:
            if not isinstance(d, Dataset):
                raise TypeError(f"Dataset.zip(): every leaf of `datasets` must be a Dataset, got "
                                f"{d!r}")
        template = nest.pack_sequence_as(datasets, [d._structure.template for d in parts])
        structure = Structure(template, [t for d in parts for t in d._structure.types],
                               [s for d in parts for s in d._structure.shapes])
        with parts[0]._variant.graph.as_default(), name_scope(None):
            variant = _dataset_op("ZipDataset", [d._variant for d in parts], structure)
        return Dataset(variant, structure)

    @staticmethod
    def from_generator(generator: Callable, output_types, output_shapes=None,
                       args=None) -> "Dataset":
        """The elements ``generator(*args)`` yields (``args``' values as numpy arrays), checked
        against ``output_types`` and ``output_shapes``; the generator runs in this process."""
        from ..ops.script_ops import op_calling
        if not callable(generator):
            raise TypeError("`generator` must be callable.")
        structure = structure_from(output_types, output_shapes)
        arg_tensors = [convert_to_tensor(a) for a in (args or ())]

        def flat_elements(*values):
            for element in generator(*values):
                yield _generated(element, structure.template, structure.types)

        def build(token):
            with device("/device:CPU:0"):
                return _new_op("GeneratorDataset", arg_tensors,
                               dict(structure.attrs(), token=token), name="GeneratorDataset")
        return Dataset(op_calling(flat_elements, "generator", build).outputs[0], structure)

    @staticmethod
    def list_files(file_pattern, shuffle: Optional[bool] = None, seed=None) -> "Dataset":
        """The files matching ``file_pattern`` (a glob or a list of them), shuffled unless
        ``shuffle=False``."""
        from ..ops.io_ops import matching_files
        dataset = Dataset.from_tensor_slices(matching_files(file_pattern))
        return dataset.shuffle(10000, seed=seed) if shuffle is None or shuffle else dataset

    # -- transformations --
    def concatenate(self, dataset: "Dataset") -> "Dataset":
        if self._structure.types != dataset._structure.types:
            raise TypeError(f"Two datasets to concatenate have different types "
                            f"{self.output_types} and {dataset.output_types}")
        nest.assert_same_structure(self._structure.template, dataset._structure.template)
        shapes = [util.most_specific_compatible_shape(a, b)
                  for a, b in zip(self._structure.shapes, dataset._structure.shapes)]
        structure = Structure(self._structure.template, self._structure.types, shapes)
        return self._transformed("ConcatenateDataset", [dataset._variant], structure)

    def map(self, map_func: Callable, num_parallel_calls=None) -> "Dataset":
        """``map_func(*element)`` of each element, in order; ``num_parallel_calls`` elements
        are mapped at once, on threads."""
        with self._variant.graph.as_default():
            fn = _TracedFunction(map_func, self._structure, "Dataset.map()", "MapDataset")
        if isinstance(fn.normalized, Dataset):
            raise TypeError("The function passed to Dataset.map() (MapDataset) returned a "
                            "Dataset; use flat_map() or interleave() for that")
        structure = Structure.of(fn.normalized)
        parallel = 1 if num_parallel_calls is None else int(num_parallel_calls)
        if parallel == 0 or parallel < AUTOTUNE:
            raise ValueError(f"num_parallel_calls must be positive or AUTOTUNE, got {parallel}")
        return self._transformed("MapDataset", [], structure,
                                 {"f": fn.function, "num_parallel_calls": parallel}, fn)

    def filter(self, predicate: Callable) -> "Dataset":
        """The elements for which ``predicate(*element)`` (a scalar bool tensor) is true."""
        with self._variant.graph.as_default():
            fn = _TracedFunction(predicate, self._structure, "Dataset.filter()", "FilterDataset")
        outs = fn.function.outputs
        if len(outs) != 1 or outs[0].dtype is not dtypes.bool or \
                not outs[0].shape.is_compatible_with(TensorShape([])):
            raise ValueError("`predicate` return type must be convertible to a scalar boolean "
                             f"tensor. Was {fn.result!r}.")
        return self._transformed("FilterDataset", [], self._structure,
                                 {"predicate": fn.function}, fn)

    def flat_map(self, map_func: Callable) -> "Dataset":
        """The elements of the datasets ``map_func(*element)`` returns, one after another."""
        with self._variant.graph.as_default():
            fn = _TracedFunction(map_func, self._structure, "Dataset.flat_map()",
                                 "FlatMapDataset")
        inner = fn.returned_dataset("Dataset.flat_map()", "FlatMapDataset")
        return self._transformed("FlatMapDataset", [], inner._structure, {"f": fn.function}, fn)

    def interleave(self, map_func: Callable, cycle_length=AUTOTUNE, block_length=1,
                   num_parallel_calls=None) -> "Dataset":
        """Elements of ``cycle_length`` datasets of ``map_func`` at a time, ``block_length``
        from each in turn (TensorFlow's order; ``num_parallel_calls`` is accepted, the order
        is the same)."""
        with self._variant.graph.as_default():
            fn = _TracedFunction(map_func, self._structure, "Dataset.interleave()",
                                 "InterleaveDataset")
        inner = fn.returned_dataset("Dataset.interleave()", "InterleaveDataset")
        with self._variant.graph.as_default():
            lengths = [_int64(cycle_length, "cycle_length"), _int64(block_length, "block_length")]
        return self._transformed("InterleaveDataset", lengths, inner._structure,
                                 {"f": fn.function}, fn)

    def _batched_shapes(self, batch_size, drop_remainder: bool, shapes) -> List[TensorShape]:
        size = int(batch_size) if drop_remainder and isinstance(batch_size, (int, np.integer)) \
            else None
        return [TensorShape([size]).concatenate(s) for s in shapes]

    def batch(self, batch_size, drop_remainder: bool = False) -> "Dataset":
        """Consecutive elements stacked ``batch_size`` at a time (the last batch smaller unless
        ``drop_remainder``)."""
        s = self._structure
        structure = Structure(s.template, s.types,
                               self._batched_shapes(batch_size, drop_remainder, s.shapes))
        with self._variant.graph.as_default():
            inputs = [_int64(batch_size, "batch_size"),
                      convert_to_tensor(bool(drop_remainder), name="drop_remainder")]
        return self._transformed("BatchDataset", inputs, structure)

    def padded_batch(self, batch_size, padded_shapes, padding_values=None,
                     drop_remainder: bool = False) -> "Dataset":
        """As ``batch``, each component padded to its ``padded_shapes`` entry (a None or -1
        dimension: the longest in the batch) with its ``padding_values`` entry (default 0, or
        b"" for strings)."""
        s = self._structure
        wanted = [as_shape(p) for p in flatten_up_to(s.template, padded_shapes,
                                                       "padded_shapes")]
        for i, (want, have) in enumerate(zip(wanted, s.shapes)):
            if want.ndims is None or not _can_pad(have, want):
                raise ValueError(f"The padded shape {want} is not compatible with the "
                                 f"corresponding input component shape {have} (component {i}).")
        if padding_values is None:
            pads = [b"" if t is dtypes.string else 0 for t in s.types]
        else:
            pads = flatten_up_to(s.template, padding_values, "padding_values")
        structure = Structure(s.template, s.types,
                               self._batched_shapes(batch_size, drop_remainder, wanted))
        with self._variant.graph.as_default():
            shape_tensors = [_int64([-1 if d is None else d for d in w.as_list()], "padded_shape")
                             for w in wanted]
            pad_tensors = [convert_to_tensor(p, dtype=t, name="padding_value")
                           for p, t in zip(pads, s.types)]
            inputs = [_int64(batch_size, "batch_size"),
                      convert_to_tensor(bool(drop_remainder), name="drop_remainder")]
        return self._transformed("PaddedBatchDataset", inputs + shape_tensors + pad_tensors,
                                 structure)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None) -> "Dataset":
        """Elements drawn at random from a buffer of ``buffer_size``; a seed (this op's, or the
        graph's) makes the orders reproducible; a new order each epoch unless
        ``reshuffle_each_iteration=False``."""
        from ..ops.random_ops import get_seed
        with self._variant.graph.as_default():
            seed1, seed2 = get_seed(seed)
            inputs = [_int64(buffer_size, "buffer_size"), _int64(seed1 or 0, "seed"),
                      _int64(seed2 or 0, "seed2")]
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return self._transformed("ShuffleDataset", inputs, self._structure,
                                 {"reshuffle_each_iteration": reshuffle})

    def repeat(self, count=None) -> "Dataset":
        """The dataset ``count`` times (None or -1: forever)."""
        with self._variant.graph.as_default():
            inputs = [_int64(-1 if count is None else count, "count")]
        return self._transformed("RepeatDataset", inputs, self._structure)

    def take(self, count) -> "Dataset":
        with self._variant.graph.as_default():
            inputs = [_int64(count, "count")]
        return self._transformed("TakeDataset", inputs, self._structure)

    def skip(self, count) -> "Dataset":
        with self._variant.graph.as_default():
            inputs = [_int64(count, "count")]
        return self._transformed("SkipDataset", inputs, self._structure)

    def cache(self, filename="") -> "Dataset":
        """The first complete pass, replayed for the later ones: kept in memory, or in the file
        ``filename``, which later programs read instead of the input."""
        with self._variant.graph.as_default():
            inputs = [convert_to_tensor(filename, dtype=dtypes.string, name="filename")]
        return self._transformed("CacheDataset", inputs, self._structure)

    def prefetch(self, buffer_size) -> "Dataset":
        """Elements made ahead, up to ``buffer_size`` of them, on a background thread."""
        with self._variant.graph.as_default():
            inputs = [_int64(buffer_size, "buffer_size")]
        return self._transformed("PrefetchDataset", inputs, self._structure)

    def apply(self, transformation_func: Callable) -> "Dataset":
        dataset = transformation_func(self)
        if not isinstance(dataset, Dataset):
            raise TypeError("`transformation_func` must return a Dataset.")
        return dataset

    # -- iterators --
    def make_one_shot_iterator(self):
        from .iterator_ops import Iterator
        return Iterator._one_shot(self)

    def make_initializable_iterator(self, shared_name: Optional[str] = None):
        from .iterator_ops import Iterator
        iterator = Iterator.from_structure(self.output_types, self.output_shapes,
                                           shared_name=shared_name)
        iterator._initializer = iterator.make_initializer(self)
        return iterator


def _can_pad(have: TensorShape, want: TensorShape) -> bool:
    """TensorFlow's rule: same rank, and no known dimension padded to a smaller one."""
    if have.ndims is None:
        return True
    return have.ndims == want.ndims and all(
        w is None or h is None or w >= h for h, w in zip(have.as_list(), want.as_list()))


def _generated(element, types_template, types) -> tuple:
    """One element a generator yielded, as flat numpy arrays of the dataset's dtypes."""
    try:
        values = flatten_up_to(types_template, element, "element")
    except ValueError:
        raise TypeError("`generator` yielded an element that did not match the expected "
                        f"structure. The expected structure was {types_template}, but the "
                        f"yielded element was {element!r}.") from None
    out = []
    for value, dtype in zip(values, types):
        try:
            if dtype is dtypes.string:
                array = np.asarray(value, dtype=object)
                array = np.vectorize(lambda s: s.encode() if isinstance(s, str) else s,
                                     otypes=[object])(array) if array.size else array
            else:
                array = np.asarray(value, dtype=dtype.as_numpy_dtype)
        except (TypeError, ValueError):
            raise TypeError("`generator` yielded an element that could not be converted to the "
                            f"expected type. The expected type was {dtype.name}, but the yielded "
                            f"element was {value!r}.") from None
        out.append(array)
    return tuple(out)


# -- file datasets ---------------------------------------------------------------------------------
def _file_source(op_type: str, filenames, inputs: list, compression_type, attrs=None) -> Tensor:
    kind = compression_type if compression_type is not None else ""
    if not isinstance(kind, str) or kind.upper() not in ("", "NONE", "ZLIB", "GZIP"):
        raise ValueError(f"{op_type}: unknown compression_type {compression_type!r}; expected "
                         "None, \"\", \"ZLIB\" or \"GZIP\"")
    kind = "" if kind.upper() == "NONE" else kind.upper()
    names = convert_to_tensor(filenames, dtype=dtypes.string, name="filenames")
    if names.shape.ndims not in (None, 0, 1):
        raise ValueError(f"{op_type}: `filenames` must be a string scalar or vector, got shape "
                         f"{names.shape}")
    structure = Structure(None, [dtypes.string], [TensorShape([])])
    return _dataset_op(op_type, [names] + inputs, structure,
                       dict(attrs or {}, compression_type=kind)), structure


class TFRecordDataset(Dataset):
    """The records of TFRecord files, file after file."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        inputs = [_int64(buffer_size or 0, "buffer_size")]
        super().__init__(*_file_source("TFRecordDataset", filenames, inputs, compression_type))


class TextLineDataset(Dataset):
    """The lines of text files, without their line endings."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        inputs = [_int64(buffer_size or 0, "buffer_size")]
        super().__init__(*_file_source("TextLineDataset", filenames, inputs, compression_type))


class FixedLengthRecordDataset(Dataset):
    """Records of ``record_bytes`` each, after ``header_bytes`` and before ``footer_bytes``."""

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None):
        inputs = [_int64(header_bytes or 0, "header_bytes"), _int64(record_bytes, "record_bytes"),
                  _int64(footer_bytes or 0, "footer_bytes"), _int64(buffer_size or 0,
                                                                    "buffer_size")]
        super().__init__(*_file_source("FixedLengthRecordDataset", filenames, inputs,
                                       compression_type))
