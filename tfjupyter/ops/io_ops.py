"""Readers and file ops, as TensorFlow 1.x's ``io_ops``: the input end of queue pipelines.

A reader (TFRecordReader, FixedLengthRecordReader, TextLineReader, WholeFileReader,
IdentityReader) is state kept by a device, like a queue: the op that makes it
(``TFRecordReaderV2``, ...) outputs a scalar string handle, and the ops that use it
(``ReaderReadV2``, ...) take that handle, and the handle of the queue of filenames ("work units")
they read from, as reference inputs, so that they run where the reader and the queue live.

``read`` takes the next record of the current file; when that file is exhausted it dequeues the
next filename (blocking, like any dequeue), and once the filename queue is closed and empty it
raises OutOfRangeError, which is how a queue runner learns that the input has ended. The kernels
are in ``kernels/cpu/reader_kernels.py``.

Also here: ``read_file``, ``matching_files`` and ``count_up_to`` (the epoch counter of
``tf.train.limit_epochs``), and the ``Assert`` op that ``string_input_producer`` uses.
"""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes as _dtypes
from ..framework.ops import Operation, Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape
from ._shapes import scalar_input

__all__ = ["ReaderBase", "TFRecordReader", "FixedLengthRecordReader", "TextLineReader",
           "WholeFileReader", "IdentityReader", "read_file", "matching_files", "count_up_to"]

READER_TYPES = ("TFRecordReaderV2", "FixedLengthRecordReaderV2", "TextLineReaderV2",
                "WholeFileReaderV2", "IdentityReaderV2")
_QUEUE_TYPES = ("FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2")
_INT_TYPES = (_dtypes.int32, _dtypes.int64)


# -- shape rules -----------------------------------------------------------------------------------
def _check_handle(op, index: int, types, what: str) -> Operation:
    """Input ``index`` must be the handle of a ``what`` (made by one of ``types``): the kernel
    finds the resource through the op that made it."""
    scalar_input(op, index, (_dtypes.string,), what)
    src = op.inputs[index].op
    if src.type not in types:
        raise TypeError(f"Input '{what}' of '{op.type}' Op '{op.name}' must be the handle of a "
                        f"{what.split('_')[0]}, but it comes from '{src.name}' ({src.type})")
    return src


def _check_reader_inputs(op) -> None:
    _check_handle(op, 0, READER_TYPES, "reader_handle")
    queue = _check_handle(op, 1, _QUEUE_TYPES, "queue_handle")
    types = list(queue.get_attr("component_types"))
    if types != [_dtypes.string]:
        raise TypeError(f"'{op.name}' ({op.type}) reads the filenames of a queue of single "
                        f"strings, but queue '{queue.name}' holds "
                        f"[{', '.join(t.name for t in types)}]")


@register_op("TFRecordReaderV2", stateful=True)
@register_op("FixedLengthRecordReaderV2", stateful=True)
@register_op("TextLineReaderV2", stateful=True)
@register_op("WholeFileReaderV2", stateful=True)
@register_op("IdentityReaderV2", stateful=True)
def _reader_shape(op):
    if op.type == "FixedLengthRecordReaderV2":
        if op.get_attr("record_bytes") <= 0:
            raise ValueError(f"record_bytes must be > 0, not {op.get_attr('record_bytes')}")
        for attr in ("header_bytes", "footer_bytes", "hop_bytes"):
            if op.get_attr(attr) < 0:
                raise ValueError(f"{attr} must be >= 0, not {op.get_attr(attr)}")
    elif op.type == "TextLineReaderV2" and op.get_attr("skip_header_lines") < 0:
        raise ValueError(f"skip_header_lines must be >= 0, not {op.get_attr('skip_header_lines')}")
    elif op.type == "TFRecordReaderV2" and op.get_attr("compression_type") not in ("", "ZLIB",
                                                                                   "GZIP"):
        raise ValueError(f"compression_type must be '', 'ZLIB' or 'GZIP', not "
                         f"{op.get_attr('compression_type')!r}")
    return [(_dtypes.string, TensorShape(()))]


@register_op("ReaderReadV2", ref_inputs=(0, 1), stateful=True)
def _read_shape(op):
    _check_reader_inputs(op)
    return [(_dtypes.string, TensorShape(())), (_dtypes.string, TensorShape(()))]


@register_op("ReaderReadUpToV2", ref_inputs=(0, 1), stateful=True)
def _read_up_to_shape(op):
    _check_reader_inputs(op)
    scalar_input(op, 2, (_dtypes.int64,), "num_records")
    return [(_dtypes.string, TensorShape([None])), (_dtypes.string, TensorShape([None]))]


@register_op("ReaderNumRecordsProducedV2", ref_inputs=(0,), stateful=True)
@register_op("ReaderNumWorkUnitsCompletedV2", ref_inputs=(0,), stateful=True)
def _reader_count_shape(op):
    _check_handle(op, 0, READER_TYPES, "reader_handle")
    return [(_dtypes.int64, TensorShape(()))]


@register_op("ReaderResetV2", ref_inputs=(0,), stateful=True)
def _reader_reset_shape(op):
    _check_handle(op, 0, READER_TYPES, "reader_handle")
    return []


@register_op("ReadFile", stateful=True)  # stateful: the file may change between steps
def _read_file_shape(op):
    scalar_input(op, 0, (_dtypes.string,), "filename")
    return [(_dtypes.string, TensorShape(()))]


@register_op("MatchingFiles", stateful=True)
def _matching_files_shape(op):
    pattern = op.inputs[0]
    if pattern.dtype is not _dtypes.string:
        raise TypeError(f"Input 'pattern' of 'MatchingFiles' Op '{op.name}' has type "
                        f"{pattern.dtype.name} that does not match expected type of string.")
    if pattern.shape.ndims not in (None, 0, 1):
        raise ValueError(f"Shape must be at most rank 1 but is rank {pattern.shape.ndims} for "
                         f"'{op.name}' (op: 'MatchingFiles') input 'pattern'")
    return [(_dtypes.string, TensorShape([None]))]


@register_op("CountUpTo", ref_inputs=(0,), stateful=True)
def _count_up_to_shape(op):
    ref = op.inputs[0]
    if ref.dtype not in _INT_TYPES:
        raise TypeError(f"CountUpTo '{op.name}' counts in an int32 or int64 variable, not "
                        f"{ref.dtype.name}")
    if not ref.shape.is_compatible_with(TensorShape(())):
        raise ValueError(f"Shape must be rank 0 but is rank {ref.shape.ndims} for '{op.name}' "
                         f"(op: 'CountUpTo') input 'ref'")
    return [(ref.dtype, TensorShape(()))]


for _t in READER_TYPES + ("ReaderReadV2", "ReaderReadUpToV2", "ReaderNumRecordsProducedV2",
                          "ReaderNumWorkUnitsCompletedV2", "ReaderResetV2", "ReadFile",
                          "MatchingFiles", "CountUpTo"):
    NotDifferentiable(_t)


# -- readers ---------------------------------------------------------------------------------------
def _queue_ref(queue) -> Tensor:
    """A queue's handle, from a queue object (FIFOQueue, ...) or the handle itself."""
    return queue if isinstance(queue, Tensor) else queue.queue_ref


class ReaderBase:
    """Reads records from the files named in a queue of filenames.

    ``read(queue)`` gives the (key, value) of the next record, ``read_up_to(queue, n)`` up to
    ``n`` of them as vectors (never spanning two files, as in TensorFlow). Every reader's key
    names the file; what follows the file name depends on the reader.
    """

    def __init__(self, reader_ref: Tensor, supports_serialize: bool = False):
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    @property
    def reader_ref(self) -> Tensor:
        """The reader's handle (a scalar string tensor)."""
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        return self._supports_serialize

    def read(self, queue, name: Optional[str] = None):
        """(key, value) scalar strings of the next record; OutOfRangeError once ``queue`` is
        closed and every file it held has been read."""
        op = _new_op("ReaderReadV2", [self._reader_ref, _queue_ref(queue)], {},
                     name=name or "ReaderReadV2")
        return op.outputs[0], op.outputs[1]

    def read_up_to(self, queue, num_records, name: Optional[str] = None):
        """(keys, values), vectors of at most ``num_records`` records of one file (fewer when
        the file ends first)."""
        with name_scope(name, "ReaderReadUpToV2", [self._reader_ref, num_records]) as scope:
            n = convert_to_tensor(num_records, dtype=_dtypes.int64, name="num_records")
            op = _new_op("ReaderReadUpToV2", [self._reader_ref, _queue_ref(queue), n], {},
                         name=scope)
        return op.outputs[0], op.outputs[1]

    def num_records_produced(self, name: Optional[str] = None) -> Tensor:
        """How many records this reader has produced (int64)."""
        return _new_op("ReaderNumRecordsProducedV2", [self._reader_ref], {},
                       name=name or "ReaderNumRecordsProducedV2").outputs[0]

    def num_work_units_completed(self, name: Optional[str] = None) -> Tensor:
        """How many files this reader has finished (int64)."""
        return _new_op("ReaderNumWorkUnitsCompletedV2", [self._reader_ref], {},
                       name=name or "ReaderNumWorkUnitsCompletedV2").outputs[0]

    def reset(self, name: Optional[str] = None) -> Operation:
        """An op that returns the reader to its initial state (no current file, counts zero)."""
        return _new_op("ReaderResetV2", [self._reader_ref], {},
                       name=name or "ReaderResetV2")

    def serialize_state(self, name: Optional[str] = None):
        raise NotImplementedError(f"Reader '{self._reader_ref.op.name}' does not support "
                                  "serializing its state")

    def restore_state(self, state, name: Optional[str] = None):
        raise NotImplementedError(f"Reader '{self._reader_ref.op.name}' does not support "
                                  "restoring its state")


def _reader_op(op_type: str, name: Optional[str], default: str, **attrs) -> Tensor:
    attrs.update(container="", shared_name="")
    return _new_op(op_type, [], attrs, name=name or default).outputs[0]


class WholeFileReader(ReaderBase):
    """Each file is one record: key the file name, value its contents."""

    def __init__(self, name: Optional[str] = None):
        super().__init__(_reader_op("WholeFileReaderV2", name, "WholeFileReaderV2"))


class TextLineReader(ReaderBase):
    """Each line of a file is a record (without its ``\\n`` or ``\\r\\n``); the key is
    ``b"file:line"`` with lines counted from 1, skipped header lines included."""

    def __init__(self, skip_header_lines: Optional[int] = None, name: Optional[str] = None):
        super().__init__(_reader_op("TextLineReaderV2", name, "TextLineReaderV2",
                                    skip_header_lines=int(skip_header_lines or 0)))


class FixedLengthRecordReader(ReaderBase):
    """Records of ``record_bytes`` bytes, after ``header_bytes`` and before ``footer_bytes``
    of each file; the key is ``b"file:record"`` with records counted from 0. With
    ``hop_bytes`` > 0, record k starts at header_bytes + k * hop_bytes (records may overlap),
    as long as it fits before the footer."""

    def __init__(self, record_bytes: int, header_bytes: Optional[int] = None,
                 footer_bytes: Optional[int] = None, hop_bytes: Optional[int] = None,
                 name: Optional[str] = None, encoding: Optional[str] = None):
        if encoding:
            raise NotImplementedError("FixedLengthRecordReader: compressed files (encoding="
                                      f"{encoding!r}) are not supported")
        super().__init__(_reader_op("FixedLengthRecordReaderV2", name,
                                    "FixedLengthRecordReaderV2", record_bytes=int(record_bytes),
                                    header_bytes=int(header_bytes or 0),
                                    footer_bytes=int(footer_bytes or 0),
                                    hop_bytes=int(hop_bytes or 0), encoding=""))


def _compression_type(options) -> str:
    """TFRecordOptions (or a compression name or type, or None) -> '', 'ZLIB' or 'GZIP'."""
    from ..python_io import TFRecordOptions
    return TFRecordOptions.get_compression_type_string(options)


class TFRecordReader(ReaderBase):
    """The records of TFRecord files; the key is ``b"file:offset"``, the byte offset at which
    the record starts."""

    def __init__(self, name: Optional[str] = None, options=None):
        super().__init__(_reader_op("TFRecordReaderV2", name, "TFRecordReaderV2",
                                    compression_type=_compression_type(options)))


class IdentityReader(ReaderBase):
    """Each work unit is one record whose key and value are the work unit itself."""

    def __init__(self, name: Optional[str] = None):
        super().__init__(_reader_op("IdentityReaderV2", name, "IdentityReaderV2"))


# -- file ops --------------------------------------------------------------------------------------
def read_file(filename, name: Optional[str] = None) -> Tensor:
    """The contents of the file ``filename`` (a scalar string)."""
    filename = convert_to_tensor(filename, dtype=_dtypes.string)
    return _new_op("ReadFile", [filename], {}, name=name or "ReadFile").outputs[0]


def matching_files(pattern, name: Optional[str] = None) -> Tensor:
    """The sorted names of the files matching a glob pattern (or a vector of them); an empty
    vector when nothing matches, as in TensorFlow."""
    pattern = convert_to_tensor(pattern, dtype=_dtypes.string)
    return _new_op("MatchingFiles", [pattern], {}, name=name or "MatchingFiles").outputs[0]


def count_up_to(ref, limit: int, name: Optional[str] = None) -> Tensor:
    """Increments the int variable ``ref`` and returns its value before the increment;
    OutOfRangeError once that value would reach ``limit``."""
    from ..variables import Variable
    ref_t = ref._ref() if isinstance(ref, Variable) else ref
    if not isinstance(ref_t, Tensor) or ref_t.op.type != "VariableV2":
        raise TypeError(f"count_up_to needs a Variable to count in, got {ref!r}")
    return _new_op("CountUpTo", [ref_t], {"limit": int(limit)},
                   name=name or "CountUpTo").outputs[0]


def _assert(condition, message: str, name: Optional[str] = None) -> Operation:
    """``tf.Assert(condition, [message])``: fails the step with InvalidArgumentError
    ("assertion failed: [message]") when ``condition`` is false (string_input_producer's check)."""
    from .logging_ops import Assert
    return Assert(condition, [message], name=name)
