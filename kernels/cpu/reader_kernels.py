"""CPU kernels of the readers of input pipelines (``tfjupyter/ops/io_ops.py``), and ReadFile,
MatchingFiles, CountUpTo and Assert."""
from __future__ import annotations

import glob
import itertools
import logging
import os
import threading
from typing import List, Optional, Tuple

import numpy as np

from tfjupyter.framework import errors
from tfjupyter.runtime import cancellation

from . import KERNELS
from .array_kernels import as_int
from .data_flow_kernels import _node, _queue, _resource_getter, resource_handle
from .io_kernels import _scalar_str, _str_list
from .state_kernels import _stored, _variable_name

_log = logging.getLogger("tfjupyter")


# A reader is a resource of its device, found like a queue (data_flow_kernels._resource_getter):
# under its shared_name, or privately under its op's name. Its ops take the reader's handle and
# the filename queue's handle as reference inputs, so they run where both live.
#
# The reading loop follows TensorFlow's ReaderBase: when no file is in progress, dequeue the next
# filename from the queue (a blocking dequeue: OutOfRangeError once the queue is closed and empty)
# and open it; read records until the file ends; a read_up_to returns as soon as a file ends
# with records read, so its records never span two files. One reader serves one read at a time:
# the others wait their turn through cancellation.wait_until, so closing the session ends them.

def _decode_path(work: bytes) -> str:
    return work.decode("utf-8", "surrogateescape")


def _open(reader_name: str, path: str, where: str):
    """The file ``path`` opened for reading, or the OpError TensorFlow gives for it."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{reader_name}: {path}; No such file or "
                                               f"directory{where}") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, None, f"{reader_name}: {path}; Is a "
                                                         f"directory{where}") from None
    except OSError as e:
        raise errors.PermissionDeniedError(None, None, f"{reader_name}: {path}; "
                                                       f"{e.strerror}{where}") from None


def _strings(items: List[bytes]) -> np.ndarray:
    """A 1-D tf.string array of ``items`` (filled element by element, so that numpy never
    reads the bytes objects as sequences)."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


class ReaderResource:
    """What every reader shares: the file in progress, the counts, the reading loop.

    Subclasses implement ``_start`` (open ``self.work``), ``_read(n)`` -> (keys, values, at_end)
    (up to n records of the current file; at_end only with no records) and ``_close``.
    """

    kind = "Reader"

    def __init__(self, name: str, signature: tuple):
        self.name = f"{self.kind} '{name}'"
        self.signature = signature
        self.work: Optional[bytes] = None      # the file being read, as dequeued
        self.path: Optional[str] = None
        self.work_started = 0
        self.work_finished = 0
        self.records_produced = 0
        # The condition's own lock is taken directly: a Lock's `with` costs a third of a
        # Condition's, and every read takes it twice.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._busy = False
        self._waiting = 0   # reads waiting for their turn
        self._what_turn = f"read from {self.name} (another read of it is in progress)"

    # -- one operation at a time -----------------------------------------------------------------
    def _acquire(self) -> None:
        with self._lock:
            if self._busy:
                self._waiting += 1
                try:
                    cancellation.wait_until(self._cond, lambda: not self._busy, self._what_turn)
                finally:
                    self._waiting -= 1
            self._busy = True

    def _release(self) -> None:
        with self._lock:
            self._busy = False
            if self._waiting:   # Condition.notify costs microseconds even with no waiter
                self._cond.notify()

    # -- the loop ----------------------------------------------------------------------------------
    def _next_work(self, queue, where: str) -> bytes:
        element = queue.dequeue(1, False, where)[0]
        if len(element) != 1:
            raise errors.InvalidArgumentError(None, None, f"{self.name}: expected a single "
                                              f"component queue of filenames{where}")
        value = element[0]
        if value.dtype != np.object_ or value.size != 1:
            raise errors.InvalidArgumentError(
                None, None, f"{self.name}: expected to dequeue a one-element string tensor, "
                f"got {value.dtype} of shape {list(value.shape)}{where}")
        work = value.reshape(-1)[0]
        return work if isinstance(work, bytes) else str(work).encode()

    def read(self, queue_getter, n: int, where: str) -> Tuple[List[bytes], List[bytes]]:
        """Up to ``n`` records (at least one): from the current file, or the next ones."""
        self._acquire()
        try:
            return self._read_records(queue_getter, n, where)
        finally:
            self._release()

    def read_one(self, queue_getter, where: str) -> Tuple[bytes, bytes]:
        """``read(queue_getter, 1, where)``'s record, as (key, value). ReaderRead's runner
        threads read one record per step, so the usual case (a file in progress, with a
        record left) goes through the reader's ``_read_one``, without read's loop."""
        self._acquire()
        try:
            if self.work is not None:
                record = self._read_one()
                if record is not None:
                    self.records_produced += 1
                    return record
            keys, values = self._read_records(queue_getter, 1, where)
            return keys[0], values[0]
        finally:
            self._release()

    def _read_records(self, queue_getter, n: int, where: str) -> Tuple[List[bytes], List[bytes]]:
        """read's loop, for the reader's current operation."""
        keys: List[bytes] = []
        values: List[bytes] = []
        while len(keys) < n:
            if self.work is None:
                work = self._next_work(queue_getter(), where)
                self.work, self.path = work, _decode_path(work)
                try:
                    self._start(where)
                except BaseException:
                    # As TensorFlow: a file that cannot be opened is dropped; the next read
                    # moves on to the next file.
                    self.work = self.path = None
                    raise
                self.work_started += 1
            try:
                k, v, at_end = self._read(n - len(keys), where)
            except errors.OpError:
                if keys:
                    # Hand out the good records read so far; the reader stays at the bad
                    # one, so the error comes again with the next read.
                    break
                raise
            keys.extend(k)
            values.extend(v)
            self.records_produced += len(k)
            if at_end:
                self._close()
                self.work = self.path = None
                self.work_finished = self.work_started
                if keys:
                    break
        return keys, values

    def reset(self) -> None:
        self._acquire()
        try:
            if self.work is not None:
                self._close()
            self.work = self.path = None
            self.work_started = self.work_finished = self.records_produced = 0
        finally:
            self._release()

    # -- per reader --------------------------------------------------------------------------------
    def _start(self, where: str) -> None:
        raise NotImplementedError

    def _read(self, n: int, where: str) -> Tuple[List[bytes], List[bytes], bool]:
        raise NotImplementedError

    def _read_one(self) -> Optional[Tuple[bytes, bytes]]:
        """The next (key, value) of the current file, or None to leave the record to ``_read``
        (the end of the file, an error to report, a reader without a shortcut)."""
        return None

    def _close(self) -> None:
        pass


class WholeFileReaderResource(ReaderResource):
    """One record per file: key the filename, value the whole contents."""

    kind = "WholeFileReader"

    def _start(self, where: str) -> None:
        with _open(self.name, self.path, where) as f:
            self._contents: Optional[bytes] = f.read()

    def _read(self, n, where):
        if self._contents is None:
            return [], [], True
        contents, self._contents = self._contents, None
        return [self.work], [contents], False

    def _close(self) -> None:
        self._contents = None


class IdentityReaderResource(WholeFileReaderResource):
    """One record per work unit: key and value the work unit (no file is opened)."""

    kind = "IdentityReader"

    def _start(self, where: str) -> None:
        self._contents = self.work


class TextLineReaderResource(ReaderResource):
    """One record per line, without its line ending; key ``file:line`` counting from 1."""

    kind = "TextLineReader"

    def __init__(self, name: str, signature: tuple, skip_header_lines: int):
        super().__init__(name, signature)
        self.skip_header_lines = skip_header_lines
        self._file = None
        self._line = 0

    def _start(self, where: str) -> None:
        self._file = _open(self.name, self.path, where)
        self._line = 0
        for _ in range(self.skip_header_lines):   # header lines still count in the keys
            if not self._file.readline():
                break
            self._line += 1

    def _read(self, n, where):
        lines = list(itertools.islice(self._file, n))
        if not lines:
            return [], [], True
        values = []
        for line in lines:   # TensorFlow's ReadLine: drop the "\n", then a "\r" before it
            if line.endswith(b"\n"):
                line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
            values.append(line)
        first = self._line + 1
        self._line += len(lines)
        work = self.work
        return [b"%s:%d" % (work, i) for i in range(first, self._line + 1)], values, False

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class FixedLengthRecordReaderResource(ReaderResource):
    """Records of record_bytes at header_bytes + k * hop_bytes (hop_bytes 0: record_bytes),
    each ending before the footer; key ``file:k``."""

    kind = "FixedLengthRecordReader"

    def __init__(self, name: str, signature: tuple, record_bytes: int, header_bytes: int,
                 footer_bytes: int, hop_bytes: int):
        super().__init__(name, signature)
        self.record_bytes = record_bytes
        self.header_bytes = header_bytes
        self.footer_bytes = footer_bytes
        self.hop = hop_bytes or record_bytes
        self._file = None
        self._pos = self._limit = self._record = 0

    def _start(self, where: str) -> None:
        f = _open(self.name, self.path, where)
        size = os.fstat(f.fileno()).st_size
        if size < self.header_bytes + self.footer_bytes:
            f.close()
            raise errors.InvalidArgumentError(
                None, None, f"{self.name}: file {self.path} has {size} bytes, fewer than its "
                f"header_bytes ({self.header_bytes}) and footer_bytes ({self.footer_bytes}) "
                f"together{where}")
        f.seek(self.header_bytes)
        self._file = f
        self._pos = self.header_bytes
        self._limit = size - self.footer_bytes
        self._record = 0

    def _read(self, n, where):
        record, hop, pos = self.record_bytes, self.hop, self._pos
        fit = 0 if pos + record > self._limit else (self._limit - record - pos) // hop + 1
        if fit == 0:
            left = self._limit - pos
            if hop == record and left > 0:
                # TensorFlow ends the file there too; say so, since it usually means a wrong
                # record_bytes or header/footer size.
                _log.warning("%s: ignoring the last %d bytes of %s before its footer: fewer "
                             "than record_bytes (%d)", self.name, left, self.path, record)
            return [], [], True
        k = min(n, fit)
        span = (k - 1) * hop + record
        data = self._file.read(span)
        if len(data) != span:   # the file shrank since it was opened
            raise errors.DataLossError(
                None, None, f"{self.name}: {self.path} ended at offset {pos + len(data)}, "
                f"inside the record at offset {pos + (len(data) // hop) * hop}{where}")
        if hop != record:
            # Overlapping (or gapped) records: the next read starts k hops on from pos.
            self._file.seek(pos + k * hop)
        self._pos = pos + k * hop
        values = [data[i:i + record] for i in range(0, k * hop, hop)]
        first = self._record
        self._record += k
        work = self.work
        return [b"%s:%d" % (work, i) for i in range(first, first + k)], values, False

    def _read_one(self):
        record, pos = self.record_bytes, self._pos
        if pos + record > self._limit:
            return None
        data = self._file.read(record)
        if len(data) != record:   # the file shrank: _read says so
            self._file.seek(pos)
            return None
        if self.hop != record:
            self._file.seek(pos + self.hop)
        self._pos = pos + self.hop
        self._record += 1
        return b"%s:%d" % (self.work, self._record - 1), data

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TFRecordReaderResource(ReaderResource):
    """The records of TFRecord files (python_io.RecordReader); key ``file:offset``."""

    kind = "TFRecordReader"

    def __init__(self, name: str, signature: tuple, compression_type: str):
        super().__init__(name, signature)
        self.compression_type = compression_type
        self._reader = None

    def _start(self, where: str) -> None:
        from tfjupyter.python_io import RecordReader
        try:
            self._reader = RecordReader(self.path, self.compression_type)
        except errors.OpError as e:
            raise type(e)(None, None, f"{self.name}: {e.message}{where}") from None

    def _read(self, n, where):
        work = self.work
        try:   # the good records before a bad one come first; the bad one fails the next read
            offsets, values = self._reader.read_many(n)
        except errors.OpError as e:
            raise type(e)(None, None, f"{self.name}: {e.message}{where}") from None
        return [b"%s:%d" % (work, o) for o in offsets], values, not values

    def _read_one(self):
        reader = self._reader
        offset = reader.offset
        try:
            value = reader.read()
        except errors.OpError:   # the reader stays at the bad record: _read reports it
            return None
        return None if value is None else (b"%s:%d" % (self.work, offset), value)

    def _close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


_READER_TYPES = ("TFRecordReaderV2", "FixedLengthRecordReaderV2", "TextLineReaderV2",
                 "WholeFileReaderV2", "IdentityReaderV2")
_READER_ATTRS = {"TFRecordReaderV2": ("compression_type",),
                 "FixedLengthRecordReaderV2": ("record_bytes", "header_bytes", "footer_bytes",
                                               "hop_bytes"),
                 "TextLineReaderV2": ("skip_header_lines",),
                 "WholeFileReaderV2": (), "IdentityReaderV2": ()}


def _reader_signature(src) -> tuple:
    return src.type, tuple((a, src.get_attr(a)) for a in _READER_ATTRS[src.type])


def _make_reader(src, signature: tuple, name: str):
    t = src.type
    if t == "TFRecordReaderV2":
        return TFRecordReaderResource(name, signature, src.get_attr("compression_type"))
    if t == "FixedLengthRecordReaderV2":
        return FixedLengthRecordReaderResource(
            name, signature, src.get_attr("record_bytes"), src.get_attr("header_bytes"),
            src.get_attr("footer_bytes"), src.get_attr("hop_bytes"))
    if t == "TextLineReaderV2":
        return TextLineReaderResource(name, signature, src.get_attr("skip_header_lines"))
    if t == "WholeFileReaderV2":
        return WholeFileReaderResource(name, signature)
    return IdentityReaderResource(name, signature)


def _reader(op, ctx):
    return _resource_getter(op, ctx, _READER_TYPES, "reader", _make_reader, _reader_signature)


def _filename_queue(op, ctx):
    """The getter of the queue whose handle is the read op's input 1."""
    return _queue(op.inputs[1].op, ctx)


@KERNELS.register(*_READER_TYPES)
def reader_handle(op, ctx):
    get = _reader(op, ctx)
    return resource_handle(get)


@KERNELS.register("ReaderReadV2")
def reader_read(op, ctx):
    get_reader = _reader(op, ctx)
    get_queue = _filename_queue(op, ctx)
    where = _node(op, ctx)

    def run():
        key, value = get_reader().read_one(get_queue, where)
        return np.array(key, dtype=object), np.array(value, dtype=object)
    return run


@KERNELS.register("ReaderReadUpToV2")
def reader_read_up_to(op, ctx):
    get_reader = _reader(op, ctx)
    get_queue = _filename_queue(op, ctx)
    where = _node(op, ctx)

    def run(num_records):
        n = as_int(num_records)
        if n <= 0:
            raise errors.InvalidArgumentError(
                None, None, f"num_records ({n}) must be > 0{where}")
        keys, values = get_reader().read(get_queue, n, where)
        return _strings(keys), _strings(values)
    return run


@KERNELS.register("ReaderNumRecordsProducedV2")
def reader_num_records_produced(op, ctx):
    get = _reader(op, ctx)
    return lambda: np.array(get().records_produced, dtype=np.int64)


@KERNELS.register("ReaderNumWorkUnitsCompletedV2")
def reader_num_work_units_completed(op, ctx):
    get = _reader(op, ctx)
    return lambda: np.array(get().work_finished, dtype=np.int64)


@KERNELS.register("ReaderResetV2")
def reader_reset(op, ctx):
    get = _reader(op, ctx)
    return lambda: get().reset()


# -- files -----------------------------------------------------------------------------------------
@KERNELS.register("ReadFile")
def read_file(op, ctx):
    where = _node(op, ctx)

    def run(filename):
        path = _scalar_str(filename, op, "filename")
        with _open(f"ReadFile '{op.name}'", path, where) as f:
            return np.array(f.read(), dtype=object)
    return run


@KERNELS.register("MatchingFiles")
def matching_files(op, ctx):
    def run(pattern):
        names: List[bytes] = []
        for p in _str_list(pattern):
            names.extend(os.fsencode(m) for m in glob.glob(p))
        return _strings(sorted(names))   # sorted, as TensorFlow's MatchingFiles
    return run


# -- counting and asserting ------------------------------------------------------------------------
@KERNELS.register("CountUpTo")
def count_up_to(op, ctx):
    store = ctx.resources.variables
    name = _variable_name(op)
    limit = op.get_attr("limit")
    where = _node(op, ctx)
    # Several runner threads, with kernels of different plans, may count in one variable: one
    # lock per device (held for an increment only) makes each count a single step.
    lock = ctx.resources.lock

    def run():
        with lock:
            current = _stored(store, name, op, ctx)
            before = int(current)
            if before >= limit:
                raise errors.OutOfRangeError(None, None, f"Reached limit of {limit}{where}")
            current[...] = before + 1
        return np.array(before, dtype=current.dtype)
    return run
