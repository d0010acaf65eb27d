"""TFRecord files (``tf.python_io``): the record format of TensorFlow's input pipelines.

A TFRecord file is a sequence of records, each::

    uint64  length                  little endian
    uint32  masked crc32c(length)   of the 8 length bytes
    byte    data[length]
    uint32  masked crc32c(data)

With ZLIB or GZIP compression the *whole* byte stream above is one zlib (RFC 1950, with its
2-byte header) or gzip (RFC 1952) stream, as TensorFlow's ``ZlibOutputBuffer`` writes it; record
offsets always count bytes of the uncompressed stream.

Reading follows ``tensorflow/core/lib/io/record_reader.cc``: a clean end of file between records
ends the iteration; a partial header or partial data is ``DataLossError("truncated record at
N")``; a checksum mismatch is ``DataLossError("corrupted record at N")``. Our messages add the
file's path and which part was bad.
"""
from __future__ import annotations

import os
import struct
import zlib
from typing import Iterator, List, Optional, Tuple, Union

import google_crc32c

from .framework import errors
from .summary._encoding import _MASK_DELTA, mask_crc
from .train.tensor_bundle import as_os_error

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator",
           "RecordReader"]

_HEADER = struct.Struct("<QI")   # length, masked crc of the length
_FOOTER = struct.Struct("<I")    # masked crc of the data
_LENGTH = struct.Struct("<Q")
_HEADER_SIZE, _FOOTER_SIZE = 12, 4
# What a Z_SYNC_FLUSH (TFRecordWriter.flush) leaves at the end of a deflate stream: an empty
# stored block. A file of a writer still writing ends there; a cut file almost never does.
_SYNC_FLUSH = b"\x00\x00\xff\xff"

# Reads go to the file in chunks this large: a record costs a few slices of an in-memory buffer,
# not a system call per field.
_CHUNK = 1 << 20
_MAX_READ = 64 << 20

# zlib's window-bits argument selects the container: 15 -> zlib header + adler32 trailer,
# 15 + 16 -> gzip header + crc32 trailer.
_WBITS = {"ZLIB": zlib.MAX_WBITS, "GZIP": zlib.MAX_WBITS + 16}
# TensorFlow's ZlibCompressionOptions default mem_level is 9 (zlib's own default is 8); using
# the same value makes our compressed files match TensorFlow's byte for byte.
_TF_MEM_LEVEL = 9


class TFRecordCompressionType:
    """The compression of a whole TFRecord file."""
    NONE = 0
    ZLIB = 1
    GZIP = 2


_TYPE_STRINGS = {TFRecordCompressionType.NONE: "", TFRecordCompressionType.ZLIB: "ZLIB",
                 TFRecordCompressionType.GZIP: "GZIP"}


class TFRecordOptions:
    """Options of a TFRecord file: its compression type and, when compressed, zlib's level."""

    compression_type_map = dict(_TYPE_STRINGS)

    def __init__(self, compression_type=None, compression_level: Optional[int] = None):
        self.compression_type = _compression_string(compression_type, "TFRecordOptions")
        if compression_level is not None and not -1 <= compression_level <= 9:
            raise ValueError(f"TFRecordOptions: compression_level must be in [-1, 9], got "
                             f"{compression_level}")
        self.compression_level = compression_level

    @classmethod
    def get_compression_type_string(cls, options) -> str:
        """``""``, ``"ZLIB"`` or ``"GZIP"`` for options given as None, a TFRecordOptions, a
        TFRecordCompressionType value or one of those strings."""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return _compression_string(options, "TFRecordOptions.get_compression_type_string")

    def __repr__(self) -> str:
        return f"TFRecordOptions(compression_type={self.compression_type!r})"


def _compression_string(value, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, TFRecordOptions):
        return value.compression_type
    if isinstance(value, str):
        if value.upper() in ("", "NONE", "ZLIB", "GZIP"):
            return "" if value.upper() == "NONE" else value.upper()
    elif isinstance(value, int) and value in _TYPE_STRINGS:
        return _TYPE_STRINGS[value]
    raise ValueError(f"{where}: unknown compression type {value!r}; expected None, \"\", "
                     f"\"ZLIB\", \"GZIP\" or a TFRecordCompressionType value")


def _compression_level(options) -> int:
    level = getattr(options, "compression_level", None)
    return zlib.Z_DEFAULT_COMPRESSION if level is None else level


def _open_error(path: str, e: OSError) -> errors.OpError:
    return as_os_error(e, path)  # the checkpoints' mapping: one error class per kind of failure


# -- reading -----------------------------------------------------------------------------------


class _InflatingSource:
    """The uncompressed bytes of a zlib or gzip file, in chunks of about the size asked for."""

    def __init__(self, f, kind: str):
        self._f, self._kind = f, kind
        self._wbits = _WBITS[kind]
        self._inflate = zlib.decompressobj(self._wbits)
        self._file_done = False
        self._tail = b""  # the last 4 bytes of the file read so far (none: an empty file)

    def read(self, n: int) -> bytes:
        out = b""
        while not out:
            if self._inflate.unconsumed_tail:  # what max_length held back last time
                data = self._inflate.unconsumed_tail
            elif self._inflate.eof and self._inflate.unused_data:
                # A second stream after the first one's trailer: concatenated gzip files (as
                # `cat a.gz b.gz` makes) are one valid gzip file.
                data = self._inflate.unused_data
                self._inflate = zlib.decompressobj(self._wbits)
            else:
                if self._file_done:
                    return b""
                data = self._f.read(_CHUNK)
                if not data:
                    self._file_done = True
                    if self._tail and not self._inflate.eof and self._tail != _SYNC_FLUSH:
                        # The stream neither ended nor stopped where the writer's flush() left
                        # it: the file was cut, and whatever records followed must not pass
                        # for the end of the data.
                        raise _CorruptStream(f"{self._kind} stream ends before its end marker "
                                             f"(the file is truncated)")
                    return b""
                self._tail = (self._tail + data)[-4:]
            try:
                out = self._inflate.decompress(data, max(n, _CHUNK))
            except zlib.error as e:
                raise _CorruptStream(f"{self._kind} stream is corrupt ({e})") from None
        return out


class _CorruptStream(Exception):
    """The compressed stream itself is bad; RecordReader turns it into a DataLossError."""


class RecordReader:
    """Reads the records of one TFRecord file in order, checking both checksums of each.

    ``read()`` returns the next record's bytes, or None at the end of the file. A truncated or
    corrupted record raises ``errors.DataLossError`` naming the file and the record's byte offset
    (in the uncompressed stream); the reader then stays at that record. ``offset`` is the offset
    of the next record.
    """

    def __init__(self, path: Union[str, os.PathLike], options=None):
        self.path = os.fspath(path)
        kind = _compression_string(options, "RecordReader")
        try:
            self._file = open(self.path, "rb", buffering=0)  # we do our own (larger) buffering
        except OSError as e:
            raise _open_error(self.path, e) from None
        self._source = _InflatingSource(self._file, kind) if kind \
            else self._file  # uncompressed: the file's own read(n)
        self._buf = b""      # bytes read from the stream and not yet consumed, from _pos on
        self._pos = 0
        self.offset = 0      # stream offset of the record at _buf[_pos]
        self._eof = False

    def _fill(self, need: int) -> None:
        """Makes ``_buf[_pos:]`` hold at least ``need`` bytes, or everything left."""
        have = len(self._buf) - self._pos
        parts = [self._buf[self._pos:]]
        while have < need and not self._eof:
            try:
                # At most _MAX_READ at a time: a corrupt length (whose checksum happens to
                # match) must not make us allocate its size before we find the file too short.
                chunk = self._source.read(min(max(_CHUNK, need - have), _MAX_READ))
            except _CorruptStream as e:
                raise errors.DataLossError(None, None, f"{self.path}: {e}, in the record at "
                                                       f"{self.offset}") from None
            if not chunk:
                self._eof = True
                break
            parts.append(chunk)
            have += len(chunk)
        self._buf = b"".join(parts)
        self._pos = 0

    def _data_loss(self, what: str) -> errors.DataLossError:
        return errors.DataLossError(None, None, f"{what} record at {self.offset} in {self.path}")

    def read(self) -> Optional[bytes]:
        if self._file is None:
            raise ValueError(f"RecordReader of {self.path} is closed")
        pos = self._pos
        if len(self._buf) - pos < _HEADER_SIZE:
            self._fill(_HEADER_SIZE)
            pos = 0
            if not self._buf:
                return None  # a clean end, between records
            if len(self._buf) < _HEADER_SIZE:
                raise self._data_loss("truncated")
        buf = self._buf
        length, length_crc = _HEADER.unpack_from(buf, pos)
        if mask_crc(google_crc32c.value(buf[pos:pos + 8])) != length_crc:
            raise errors.DataLossError(None, None, f"corrupted record at {self.offset} in "
                                                   f"{self.path} (the length's checksum does not "
                                                   f"match)")
        end = pos + _HEADER_SIZE + length + _FOOTER_SIZE
        if end > len(buf):
            self._fill(_HEADER_SIZE + length + _FOOTER_SIZE)
            buf, pos = self._buf, 0
            end = _HEADER_SIZE + length + _FOOTER_SIZE
            if end > len(buf):
                raise errors.DataLossError(
                    None, None, f"truncated record at {self.offset} in {self.path} (the record "
                                f"has {length} bytes of data, the file ends "
                                f"{len(buf) - _HEADER_SIZE} bytes after its header)")
        data = buf[pos + _HEADER_SIZE:end - _FOOTER_SIZE]
        if mask_crc(google_crc32c.value(data)) != _FOOTER.unpack_from(buf, end - _FOOTER_SIZE)[0]:
            raise errors.DataLossError(None, None, f"corrupted record at {self.offset} in "
                                                   f"{self.path} (the data's checksum does not "
                                                   f"match)")
        self._pos = end
        self.offset += end - pos
        return data

    def read_many(self, n: int) -> Tuple[List[int], List[bytes]]:
        """Up to ``n`` records and the offset of each; fewer at the end of the file. A bad
        record ends the batch early when records came before it (the next call raises, as
        ``read`` does); otherwise it raises here.

        The records that lie whole in the buffer are framed and checked in one loop of local
        operations: a record then costs two slices and two CRCs, about a third of what a
        ``read()`` call per record costs, which made the reader the slowest part of batched
        pipelines. Everything else (refilling, the end of the file, every error and its
        message) goes through ``read()``."""
        if self._file is None:
            raise ValueError(f"RecordReader of {self.path} is closed")
        offsets: List[int] = []
        records: List[bytes] = []
        unpack_header, unpack_footer = _HEADER.unpack_from, _FOOTER.unpack_from
        crc, delta = google_crc32c.value, _MASK_DELTA
        while len(records) < n:
            buf, pos, offset, size = self._buf, self._pos, self.offset, len(self._buf)
            while len(records) < n and pos + _HEADER_SIZE <= size:
                length, stored = unpack_header(buf, pos)
                c = crc(buf[pos:pos + 8])   # mask_crc, inlined: a call costs more than this
                if ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + delta) & 0xFFFFFFFF != stored:
                    break
                end = pos + _HEADER_SIZE + length + _FOOTER_SIZE
                if end > size:
                    break
                data = buf[pos + _HEADER_SIZE:end - _FOOTER_SIZE]
                c = crc(data)
                if ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + delta) & 0xFFFFFFFF != \
                        unpack_footer(buf, end - _FOOTER_SIZE)[0]:
                    break
                offsets.append(offset)
                records.append(data)
                offset += end - pos
                pos = end
            self._pos, self.offset = pos, offset
            if len(records) == n:
                break
            at = self.offset
            try:
                data = self.read()
            except errors.DataLossError:
                if records:
                    break
                raise
            if data is None:
                break
            offsets.append(at)
            records.append(data)
        return offsets, records

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self._buf = b""

    def __enter__(self) -> "RecordReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        f = getattr(self, "_file", None)
        if f is not None:
            f.close()


def read_chunks(path: Union[str, os.PathLike], compression_type: str = "") -> Iterator[bytes]:
    """The bytes of a file, uncompressed (``compression_type`` "", "ZLIB" or "GZIP"), in chunks
    (text-line and fixed-length datasets); a corrupt or cut compressed stream is a
    ``DataLossError`` naming the file."""
    path = os.fspath(path)
    kind = _compression_string(compression_type, "read_chunks")
    try:
        f = open(path, "rb", buffering=0)
    except OSError as e:
        raise _open_error(path, e) from None
    with f:
        source = _InflatingSource(f, kind) if kind else f
        while True:
            try:
                chunk = source.read(_CHUNK)
            except _CorruptStream as e:
                raise errors.DataLossError(None, None, f"{path}: {e}") from None
            if not chunk:
                return
            yield chunk


def tf_record_iterator(path: Union[str, os.PathLike], options=None) -> Iterator[bytes]:
    """The records of a TFRecord file, in order (``tf.python_io.tf_record_iterator``)."""
    reader = RecordReader(path, options)
    try:
        while True:
            record = reader.read()
            if record is None:
                return
            yield record
    finally:
        reader.close()


# -- writing -----------------------------------------------------------------------------------


class TFRecordWriter:
    """Writes records to a TFRecord file (``tf.python_io.TFRecordWriter``); a context manager.

    ``flush()`` makes everything written so far readable by a reader of the file (compressed
    files get a zlib sync flush: the stream stays one stream, aligned to a byte boundary).
    """

    def __init__(self, path: Union[str, os.PathLike], options=None):
        self.path = os.fspath(path)
        kind = _compression_string(options, "TFRecordWriter")
        try:
            self._file = open(self.path, "wb")
        except OSError as e:
            raise _open_error(self.path, e) from None
        self._deflate = zlib.compressobj(_compression_level(options), zlib.DEFLATED,
                                         _WBITS[kind], _TF_MEM_LEVEL) if kind else None

    def write(self, record) -> None:
        if self._file is None:
            raise ValueError(f"TFRecordWriter of {self.path} is closed")
        if isinstance(record, str):
            record = record.encode("utf-8")  # as TensorFlow's compat.as_bytes
        elif isinstance(record, (bytearray, memoryview)):
            record = bytes(record)
        elif not isinstance(record, bytes):  # bytes(5) would be five zero bytes
            raise TypeError(f"TFRecordWriter.write of {self.path}: expected bytes or str, got "
                            f"{type(record).__name__}")
        header = _LENGTH.pack(len(record))
        framed = b"".join((header, _FOOTER.pack(mask_crc(google_crc32c.value(header))), record,
                           _FOOTER.pack(mask_crc(google_crc32c.value(record)))))
        self._file.write(self._deflate.compress(framed) if self._deflate else framed)

    def flush(self) -> None:
        if self._file is None:
            raise ValueError(f"TFRecordWriter of {self.path} is closed")
        if self._deflate is not None:
            self._file.write(self._deflate.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self) -> None:
        if self._file is None:
            return
        if self._deflate is not None:
            self._file.write(self._deflate.flush(zlib.Z_FINISH))
            self._deflate = None
        self._file.close()
        self._file = None

    def __enter__(self) -> "TFRecordWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_file", None) is not None:
            self.close()
